import type { Role } from '../../src/config.js';
import { freePort } from '../../src/infra/ports.js';
import { ServiceProcess } from '../soak/service-process.js';
import { waitFor } from '../soak/settle.js';

/** Log lines kept from every process: elections, hand-overs, fenced connection ends, start-up. */
const KEPT_LINES =
  /"msg":"(elected: this instance is active|lost the lock; standing by|stepped down; standing by|handing a partition over to another process|projector processes changed: rebalancing partitions|the end of an older connection ignored: the agent is online again|device cloud started)"/;

export interface TopologyOptions {
  readonly databaseUrl: string;
  /** Shared by every process: the edge CA under `pki` is the one all broker nodes serve. */
  readonly dataDir: string;
  /** Unset: no cluster settings (one broker node and one API node need none). */
  readonly redisUrl?: string;
  readonly namespace: string;
  readonly ingress: number;
  readonly api: number;
  readonly projector: number;
  readonly scheduler: number;
  /** PROJECTOR_PARTITIONS, for a database that has not run the partitioned projectors yet. */
  readonly partitions: number;
  readonly heartbeatMs: number;
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * The service as a deployment of several processes per role on one machine, each `devcloud serve --roles
 * <role>` with the cluster settings of docs/deployment.md: the multi-process test and benchmark start it,
 * kill its processes and start them again.
 */
export class Topology {
  private constructor(
    readonly byRole: ReadonlyMap<Role, readonly ServiceProcess[]>,
    readonly mqttPorts: readonly number[],
    readonly httpPorts: readonly number[],
  ) {}

  static async start(options: TopologyOptions, startMs = 120_000): Promise<Topology> {
    const mqttPorts = await ports(options.ingress);
    const httpPorts = await ports(options.api);
    const common: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      DATA_DIR: options.dataDir,
      MQTT_HOST: '127.0.0.1',
      HTTP_HOST: '127.0.0.1',
      ...(options.redisUrl && { CLUSTER_REDIS_URL: options.redisUrl }),
      CLUSTER_NAMESPACE: options.namespace,
      CLUSTER_HEARTBEAT_MS: String(options.heartbeatMs),
      PROJECTOR_PARTITIONS: String(options.partitions),
      LOG_LEVEL: 'info',
      ...options.env,
    };
    const spawnOf = (role: Role, n: number, env: (i: number) => NodeJS.ProcessEnv) =>
      Array.from(
        { length: n },
        (_, i) => new ServiceProcess([role], { ...common, ...env(i) }, { keep: KEPT_LINES }),
      );
    // Roles without a listener of their own still parse the ports: give them ones nobody uses.
    const unused = String(await freePort());
    const byRole = new Map<Role, ServiceProcess[]>([
      [
        'ingress',
        spawnOf('ingress', options.ingress, (i) => ({ MQTT_PORT: String(mqttPorts[i]), HTTP_PORT: unused })),
      ],
      ['api', spawnOf('api', options.api, (i) => ({ HTTP_PORT: String(httpPorts[i]), MQTT_PORT: unused }))],
      [
        'projector',
        spawnOf('projector', options.projector, () => ({ HTTP_PORT: unused, MQTT_PORT: unused })),
      ],
      [
        'scheduler',
        spawnOf('scheduler', options.scheduler, () => ({ HTTP_PORT: unused, MQTT_PORT: unused })),
      ],
    ]);
    const topology = new Topology(byRole, mqttPorts, httpPorts);
    // The first process migrates the database alone; the others then start together.
    const [first, ...rest] = topology.all();
    first!.start();
    if (!(await waitFor(() => first!.ready, startMs)))
      throw new Error(`${first!.roles.join(',')} did not start: ${first!.stderrTail()}`);
    for (const p of rest) p.start();
    if (!(await waitFor(() => topology.all().every((p) => p.ready), startMs))) {
      const failed = topology.all().filter((p) => !p.ready);
      await topology.stop();
      throw new Error(
        `did not start: ${failed.map((p) => `${p.roles.join(',')}: ${p.stderrTail()}`).join('; ')}`,
      );
    }
    return topology;
  }

  of(role: Role): readonly ServiceProcess[] {
    return this.byRole.get(role) ?? [];
  }

  all(): ServiceProcess[] {
    return [...this.byRole.values()].flat();
  }

  async stop(): Promise<void> {
    await Promise.all(this.all().map((p) => p.stop()));
  }
}

async function ports(n: number): Promise<number[]> {
  const chosen: number[] = [];
  while (chosen.length < n) {
    const port = await freePort();
    if (!chosen.includes(port)) chosen.push(port);
  }
  return chosen;
}
