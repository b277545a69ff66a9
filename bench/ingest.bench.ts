import { readFileSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { agentFilesFor, writeAgentFiles } from '../src/agents/agent-files.js';
import { registerAgent } from '../src/agents/register.js';
import type { AckedMessage } from '../src/edge-sim/index.js';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { encodePgPosition } from '../src/eventstore/postgres/position.js';
import { createProject } from '../src/identity/projects.js';
import { inTransaction, type Pool } from '../src/infra/postgres/pool.js';
import { loadOrCreateAuthority } from '../src/ingress/pki/authority.js';
import { catchUpProjector } from '../src/projections/catch-up.js';
import { createSite } from '../src/registry/sites.js';
import { allProjectors } from '../src/runtime/projectors.js';
import { adoptSimulatedFleet } from '../tests/support/edge-agent.js';
import { freePort } from '../src/infra/ports.js';
import { CpuMeter, processCpuUs, processTree, round, rssMiB } from './cpu.js';
import { undoable } from './interrupt.js';
import {
  BENCH_APPLICATION,
  benchDatabase,
  benchDirectory,
  benchWorker,
  ceilings,
  machine,
  percentiles,
  report,
} from './support.js';

/**
 * End-to-end ingest, as `npm start` runs it: the service is started as its own process
 * (`devcloud serve --roles api,ingress,projector`), AGENTS simulated edge agents with DEVICES adopted
 * devices each (on a worker thread of this process) publish QoS 1 messages of 3 readings over mTLS MQTT.
 *
 * Figures per offered rate:
 * - ingest.e2e.throughput: acknowledged messages/s over SECONDS after a warm-up, agent backlog at the end,
 *   and the share of each component's ceiling measured earlier in the same run (ingest.append.*,
 *   projector.*) that this rate uses.
 * - ingest.e2e.load_generator: CPU of the simulated agents' thread over the same SECONDS (MQTT and TLS
 *   included), per acknowledged message and as a share of one core: it runs on the service's cores.
 * - ingest.e2e.cpu_us_per_message: CPU of the service process tree and of the PostgreSQL backends serving
 *   its database, from /proc, from the first publish until the read models hold everything acknowledged,
 *   per acknowledged message (the load generator and this harness excluded).
 * - ingest.e2e.puback_latency: broker receipt (the event's receivedAt) to PUBACK at the agent.
 * - ingest.e2e.lag.server.<model>: broker receipt to visible in the read model (state, telemetry).
 * - ingest.e2e.lag.end_to_end.<model>: message created at the agent to visible; agent backlog counts here.
 * - ingest.e2e.rss: the service's resident memory over the run (flat or growing).
 * - ingest.e2e.ceiling: the highest offered rate run whose end-to-end lag p99 stayed under 1 s with
 *   everything offered stored and no backlog (only meaningful with several BENCH_INGEST_RATES).
 * Once, before the first rate: service.idle.cpu, the cores the service and its backends use with nothing to do.
 *
 * "Visible" is when the read model's checkpoint (committed with its rows) passes the message's event,
 * polled every CHECKPOINT_POLL_MS; one acknowledged message in SAMPLE_EVERY is followed.
 */
const AGENTS = Number(process.env.BENCH_AGENTS ?? 10);
const DEVICES = Number(process.env.BENCH_DEVICES ?? 100);
const RATES = (process.env.BENCH_INGEST_RATES ?? '1000,6000,10000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? 30);
const SAMPLE_EVERY = 50;
/**
 * The fleet benchmarks (this one, live and scale-out) send messages of this many readings and measure after
 * the same warm-up, so their figures compare.
 */
export const READINGS_PER_MESSAGE = 3;
export const WARMUP_SECONDS = 5;
const CHECKPOINT_POLL_MS = 10;
const READ_MODELS = ['state', 'telemetry'] as const;
// Seconds the service is watched idle (started, caught up, no agent connected) before the first rate; 0: not.
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 10);
const IDLE_SETTLE_SECONDS = 3;
type ReadModel = (typeof READ_MODELS)[number];

export async function ingestBenchmarks(): Promise<void> {
  const runs: { offered: number; ok: boolean }[] = [];
  for (const [i, rate] of RATES.entries())
    runs.push({ offered: rate, ok: await ingestAt(rate, i === 0 ? IDLE_SECONDS : 0) });
  if (runs.length > 1) {
    const passing = runs.filter((r) => r.ok).map((r) => r.offered);
    report({
      figure: 'ingest.e2e.ceiling',
      messagesPerSecond: passing.length > 0 ? Math.max(...passing) : null,
      criterion: 'end-to-end lag p99 < 1 s on both read models, >= 99 % of offered stored, no agent backlog',
      ratesTried: runs.map((r) => r.offered),
      ...machine(),
    });
  }
}

interface Sample {
  readonly message: AckedMessage;
  readonly ackedAtMs: number;
}

/**
 * Returns whether the rate was sustained with end-to-end lag p99 under 1 s. With `idleSeconds`, first
 * reports what the service costs doing nothing: the floor under every rate's CPU per message.
 */
async function ingestAt(offered: number, idleSeconds: number): Promise<boolean> {
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  const scratch = await benchDirectory('devcloud-bench-');
  const dataDir = scratch.path;
  const context = {
    machine: machine(),
    postgres: db.serverVersion,
    agents: AGENTS,
    devicesPerAgent: DEVICES,
  };
  let service: ServiceProcess | undefined;
  let stopLoad = async (): Promise<{ acked: number } | undefined> => undefined;
  try {
    const mqttPort = await freePort();
    const { agents } = await provisionFleet(store, dataDir, mqttPort, AGENTS, DEVICES);
    for (const projector of allProjectors()) await catchUpProjector(db.pool, store, projector);
    service = await startServiceProcess({ databaseUrl: db.url, dataDir, mqttPort });

    // CPU is counted from before the first publish until the read models hold every acknowledged message,
    // and divided by all of them: the work done and the messages it was done for are then the same set,
    // however far behind a projector was at any moment.
    const servicePid = service.pid;
    const serviceCpuUs = () => processTree(servicePid).reduce((sum, pid) => sum + processCpuUs(pid), 0);
    if (idleSeconds > 0) {
      await sleep(IDLE_SETTLE_SECONDS * 1000);
      const idle = new CpuMeter(db.pool, serviceCpuUs, [BENCH_APPLICATION]);
      await idle.start();
      await sleep(idleSeconds * 1000);
      const used = await idle.stop();
      report({
        figure: 'service.idle.cpu',
        // Cores busy: 0.1 is a tenth of one core, every second, for nothing.
        shareOfCore: round((used.processUs + used.postgresUs) / (used.seconds * 1e6), 3),
        serviceShareOfCore: round(used.processUs / (used.seconds * 1e6), 3),
        postgresShareOfCore: round(used.postgresUs / (used.seconds * 1e6), 3),
        seconds: round(used.seconds, 1),
        machineBusyShare: used.machineBusyShare,
        ...context,
      });
    }
    const cpu = new CpuMeter(db.pool, serviceCpuUs, [BENCH_APPLICATION]);
    await cpu.start();

    const load = benchWorker('./ingest-agents.worker.ts', {
      agents,
      devices: DEVICES,
      readingsPerSecondPerDevice: (offered / (AGENTS * DEVICES)) * READINGS_PER_MESSAGE,
      readingsPerMessage: READINGS_PER_MESSAGE,
      sampleEvery: SAMPLE_EVERY,
    });
    const exited = new Promise((resolve) => load.once('exit', resolve));
    stopLoad = async () => {
      load.postMessage({ kind: 'stop' });
      const stopped = await Promise.race([
        reply(load, 'stopped').catch(() => undefined),
        exited.then(() => undefined),
        sleep(10_000).then(() => undefined),
      ]);
      await load.terminate();
      return stopped as { acked: number } | undefined;
    };
    const count = async () => {
      load.postMessage({ kind: 'count' });
      return (await reply(load, 'count')) as { acked: number; backlog: number; cpuUs: number };
    };
    // Each agent learns its devices' public ids when it reports online; then it publishes for them.
    await reply(load, 'ready');
    await sleep(WARMUP_SECONDS * 1000);

    const samples: Sample[] = [];
    load.on('message', (m: { kind: string; message?: AckedMessage; ackedAtMs?: number }) => {
      if (m.kind === 'sample') samples.push({ message: m.message!, ackedAtMs: m.ackedAtMs! });
    });
    const timeline = new CheckpointTimeline(db.pool);
    const rss = new RssSampler(servicePid);
    load.postMessage({ kind: 'sample', on: true });
    const start = await count();
    const startedAt = performance.now();
    await sleep(SECONDS * 1000);
    const end = await count();
    const seconds = (performance.now() - startedAt) / 1000;
    rss.stop();
    load.postMessage({ kind: 'sample', on: false });
    const stopped = await stopLoad();
    stopLoad = async () => undefined;
    const caughtUp = await timeline.untilCaughtUp(store, 120_000);
    const used = await cpu.stop();
    timeline.stop();
    const messages = end.acked - start.acked;
    const allMessages = stopped?.acked ?? end.acked;
    const messagesPerSecond = Math.round(messages / seconds);
    report({
      figure: 'ingest.e2e.throughput',
      offeredMessagesPerSecond: offered,
      messagesPerSecond,
      readingsPerSecond: Math.round((messages * READINGS_PER_MESSAGE) / seconds),
      readingsPerMessage: READINGS_PER_MESSAGE,
      seconds: Math.round(seconds),
      agentBacklogAtEnd: end.backlog,
      ofCeiling: shareOfCeilings(messagesPerSecond),
      ...context,
    });
    const generatorUs = end.cpuUs - start.cpuUs;
    report({
      figure: 'ingest.e2e.load_generator',
      offeredMessagesPerSecond: offered,
      microsecondsPerMessage: messages > 0 ? round(generatorUs / messages, 1) : null,
      // Of one core: what the simulated agents took from the cores the service runs on.
      shareOfCore: round(generatorUs / (seconds * 1e6), 2),
      agentBacklogAtEnd: end.backlog,
      seconds: Math.round(seconds),
      ...context,
    });
    report({
      figure: 'ingest.e2e.cpu_us_per_message',
      offeredMessagesPerSecond: offered,
      microsecondsPerMessage: round((used.processUs + used.postgresUs) / allMessages, 1),
      serviceMicrosecondsPerMessage: round(used.processUs / allMessages, 1),
      postgresMicrosecondsPerMessage: round(used.postgresUs / allMessages, 1),
      messages: allMessages,
      // Wall-clock seconds the CPU was counted over: the run, then until the read models held everything.
      seconds: round(used.seconds, 1),
      // False when they had not within 120 s: then the figure counts work for messages not yet projected.
      readModelsCaughtUp: caughtUp,
      // Share of the whole machine's cores busy during the run, ours included: near our own use = quiet.
      machineBusyShare: used.machineBusyShare,
      ourShareOfMachine: round(
        (used.processUs + used.postgresUs) / (used.seconds * 1e6 * os.cpus().length),
        2,
      ),
      ...context,
    });
    const located = await locate(db.pool, samples);
    const latency = (figure: string, from: string, to: string, values: number[]) =>
      report({
        figure,
        offeredMessagesPerSecond: offered,
        from,
        to,
        samples: values.length,
        ...percentiles(values),
        checkpointPollMs: CHECKPOINT_POLL_MS,
        ...context,
      });
    latency(
      'ingest.e2e.puback_latency',
      'broker receipt',
      'PUBACK at the agent',
      located.map((s) => s.ackedAtMs - s.receivedAtMs),
    );
    let sustained = messagesPerSecond >= offered * 0.99 && end.backlog === 0;
    for (const model of READ_MODELS) {
      const visible = located.map((s) => ({ ...s, visibleAtMs: timeline.visibleAt(model, s.position) }));
      latency(
        `ingest.e2e.lag.server.${model}`,
        'broker receipt',
        `${model} read model`,
        visible.map((s) => s.visibleAtMs - s.receivedAtMs),
      );
      const endToEnd = visible.map((s) => s.visibleAtMs - s.message.createdAtMs);
      latency(`ingest.e2e.lag.end_to_end.${model}`, 'created at the agent', `${model} read model`, endToEnd);
      sustained &&= (percentiles(endToEnd).p99Ms ?? Infinity) < 1000;
    }
    report({ figure: 'ingest.e2e.rss', offeredMessagesPerSecond: offered, ...rss.summary(), ...context });
    return sustained;
  } finally {
    await stopLoad();
    await service?.stop();
    await store.close();
    await db.drop();
    await scratch.remove();
  }
}

/** The share of each component's ceiling (measured earlier in this run) that `perSecond` messages use. */
function shareOfCeilings(messagesPerSecond: number): Record<string, number> {
  return Object.fromEntries(
    [...ceilings].map(([component, eventsPerSecond]) => [
      component,
      round(messagesPerSecond / eventsPerSecond, 2),
    ]),
  );
}

interface ServiceProcess {
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * The Node flags `npm start` gives the service (package.json), so the bench measures what users run, then
 * any of BENCH_SERVICE_NODE_FLAGS (say `--cpu-prof --cpu-prof-dir=/tmp/prof`, which Node refuses in
 * NODE_OPTIONS; the projector child inherits them).
 */
function startNodeFlags(): string[] {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    scripts: { start: string };
  };
  const words = manifest.scripts.start.split(/\s+/);
  const extra = (process.env.BENCH_SERVICE_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  return [...words.slice(1, words.indexOf('bin/devcloud.js')), ...extra];
}

/** `devcloud serve` as a user runs it, on free ports, logging warnings to this process's stderr. */
async function startServiceProcess(options: {
  databaseUrl: string;
  dataDir: string;
  mqttPort: number;
}): Promise<ServiceProcess> {
  const httpPort = await freePort();
  const cli = new URL('../bin/devcloud.js', import.meta.url).pathname;
  const child: ChildProcess = spawn(
    process.execPath,
    [...startNodeFlags(), cli, 'serve', '--roles', process.env.BENCH_ROLES ?? 'api,ingress,projector'],
    {
      env: {
        ...process.env,
        DATABASE_URL: options.databaseUrl,
        DATA_DIR: options.dataDir,
        MQTT_HOST: '127.0.0.1',
        MQTT_PORT: String(options.mqttPort),
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: String(httpPort),
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
        // The bench looks for the service's ceiling, with agents far busier than hubs: not for the quota's.
        READINGS_QUOTA_PER_SECOND: process.env.READINGS_QUOTA_PER_SECOND ?? '1000000',
        READINGS_QUOTA_BURST: process.env.READINGS_QUOTA_BURST ?? '1000000',
      },
      stdio: ['ignore', 2, 2],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = undoable(async () => {
    child.kill('SIGTERM');
    const stopped = await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)]);
    if (!stopped) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const healthy = await fetch(`http://127.0.0.1:${httpPort}/health`).then(
      (r) => r.status < 500,
      () => false,
    );
    if (healthy) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      await stop();
      throw new Error('the service process did not become healthy');
    }
    await sleep(100);
  }
  return { pid: child.pid!, stop };
}

const CHECKPOINTS = `SELECT projector, position FROM projection.checkpoints WHERE projector = ANY ($1::text[])`;

/** When each read model's checkpoint moved: polled, so "visible" is late by at most one poll. */
class CheckpointTimeline {
  readonly #times: number[] = [];
  readonly #positions: Record<ReadModel, string[]> = { state: [], telemetry: [] };
  readonly #running: Promise<void>;
  #stopped = false;

  constructor(private readonly pool: Pool) {
    this.#running = this.#poll();
  }

  async #poll(): Promise<void> {
    while (!this.#stopped) {
      const { rows } = await this.pool.query<{ projector: ReadModel; position: string | null }>(CHECKPOINTS, [
        READ_MODELS,
      ]);
      const at = Date.now();
      this.#times.push(at);
      for (const model of READ_MODELS) {
        this.#positions[model].push(rows.find((r) => r.projector === model)?.position ?? '');
      }
      await sleep(CHECKPOINT_POLL_MS);
    }
  }

  /** The first poll that saw the checkpoint at or past `position`; Infinity when none did. */
  visibleAt(model: ReadModel, position: string): number {
    const positions = this.#positions[model];
    let lo = 0;
    let hi = positions.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (positions[mid]! >= position) hi = mid;
      else lo = mid + 1;
    }
    return lo < positions.length ? this.#times[lo]! : Number.POSITIVE_INFINITY;
  }

  /**
   * Until no event a read model follows lies past its checkpoint. Not "checkpoint at the store's head": a
   * projector is woken only by its own event types, so events it does not follow (the agents going offline
   * as the load stops) never move its checkpoint, and waiting for the head waited out the whole timeout.
   */
  async untilCaughtUp(store: PostgresEventStore, timeoutMs: number): Promise<boolean> {
    const types = Object.fromEntries(allProjectors().map((p) => [p.name, p.eventTypes]));
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const behind = await Promise.all(
        READ_MODELS.map((m) => store.countEventsAfter(this.#positions[m].at(-1) || undefined, types[m]!, 1)),
      );
      if (behind.every((n) => n === 0)) return true;
      await sleep(50);
    }
    return false;
  }

  stop(): void {
    this.#stopped = true;
    void this.#running;
  }
}

/**
 * Finds the sampled messages' events in one hash join over the run's readings. A lookup per sample (a scan
 * of its device's stream each) grows with the square of the run's length: a 10-minute run spent longer
 * there than running.
 */
const LOCATE = `
  SELECT DISTINCT ON (s.n) s.n, e.transaction_id::text AS transaction_id, e.global_position,
         e.data->>'receivedAt' AS received_at
    FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS s(stream_name, seq, n)
    JOIN eventstore.events e ON e.stream_name = s.stream_name AND (e.data->>'seq')::bigint = s.seq
   WHERE e.event_type = 'ReadingsRecorded'
   ORDER BY s.n, e.transaction_id, e.global_position`;

/** Each sampled message's event: where it sits in the global order, and when the broker received it. */
async function locate(pool: Pool, samples: readonly Sample[]) {
  const { rows } = await inTransaction(pool, async (client) => {
    // The planner takes the unnested samples for a handful of rows and would loop over them.
    await client.query('SET LOCAL enable_nestloop = off');
    return client.query<{ n: string; transaction_id: string; global_position: string; received_at: string }>(
      LOCATE,
      [samples.map((s) => `readings-${s.message.deviceId}`), samples.map((s) => s.message.seq)],
    );
  });
  return rows.map((r) => ({
    ...samples[Number(r.n) - 1]!,
    position: encodePgPosition(r.transaction_id, r.global_position),
    receivedAtMs: Date.parse(r.received_at),
  }));
}

/**
 * The service's resident memory (its whole process tree) once a second, and each process's apart, so a
 * change can be told to the service process or to its projector process (their roles read from their
 * command lines; anything else the service started, such as the TypeScript loader's helper, is `other`).
 */
class RssSampler {
  readonly #total: number[] = [];
  readonly #byRole = new Map<string, number[]>();
  readonly #timer: NodeJS.Timeout;

  constructor(pid: number) {
    const sample = () => {
      const byRole = new Map<string, number>();
      for (const p of processTree(pid)) {
        const role = p === pid ? 'service' : roleOf(p);
        byRole.set(role, (byRole.get(role) ?? 0) + rssMiB(p));
      }
      this.#total.push([...byRole.values()].reduce((sum, v) => sum + v, 0));
      for (const [role, miB] of byRole) {
        const values = this.#byRole.get(role) ?? [];
        values.push(miB);
        this.#byRole.set(role, values);
      }
    };
    sample();
    this.#timer = setInterval(sample, 1000);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** First and last tenth of the run compared by their medians, so one GC does not decide it. */
  summary() {
    const processes = Object.fromEntries(
      [...this.#byRole].map(([role, values]) => {
        const { maxMiB: _max, seconds: _seconds, ...change } = firstAndLastTenth(values);
        return [role, change];
      }),
    );
    return { ...firstAndLastTenth(this.#total), processes };
  }
}

function firstAndLastTenth(values: readonly number[]) {
  const tenth = Math.max(1, Math.floor(values.length / 10));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const first = median(values.slice(0, tenth));
  const last = median(values.slice(-tenth));
  return {
    firstMiB: round(first, 1),
    lastMiB: round(last, 1),
    maxMiB: round(Math.max(...values), 1),
    changePercent: first > 0 ? round(((last - first) / first) * 100, 1) : null,
    seconds: values.length,
  };
}

function roleOf(pid: number): string {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return args.includes('--roles') && args[args.indexOf('--roles') + 1] === 'projector'
      ? 'projector'
      : 'other';
  } catch {
    return 'other';
  }
}

/** One project and site; `agents` agents, each with `devices` devices adopted through its hub. */
export async function provisionFleet(
  store: PostgresEventStore,
  dataDir: string,
  port: number,
  agents: number,
  devices: number,
) {
  const { projectId } = await createProject(store, { name: 'bench' });
  const { siteId } = await createSite(store, { projectId, name: 'Bench', timezone: 'Europe/Amsterdam' });
  const authority = await loadOrCreateAuthority(path.join(dataDir, 'pki'));
  const files = await Promise.all(
    Array.from({ length: agents }, async (_, i) => {
      const agent = await registerAgent(store, authority, { projectId, siteId });
      await adoptSimulatedFleet(store, {
        projectId,
        hubId: agent.hubId,
        seed: i + 1,
        devices,
        now: new Date(),
        durationSeconds: 600,
      });
      const agentFiles = agentFilesFor(agent, authority.certificatePem, `mqtts://127.0.0.1:${port}`);
      await writeAgentFiles(path.join(dataDir, `agent-${i}`), agentFiles);
      return agentFiles;
    }),
  );
  return { projectId, agents: files };
}

export function reply(worker: Worker, kind: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { kind: string }) => {
      if (m.kind !== kind) return;
      worker.off('message', onMessage);
      worker.off('error', reject);
      resolve(m);
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
  });
}
