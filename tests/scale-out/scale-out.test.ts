import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { EdgeSim } from '../../src/edge-sim/index.js';
import { createClient } from '../../src/identity/clients.js';
import { ClientSecretHasher } from '../../src/identity/secret-hash.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { devicesProjector } from '../../src/projections/devices/projector.js';
import { partitionsOf } from '../../src/projections/partitions.js';
import { stateFamily, stateProjector } from '../../src/projections/state/projector.js';
import { telemetryFamily, telemetryProjector } from '../../src/projections/telemetry/projector.js';
import { TcpBalancer, type BalancerFront } from '../../tools/scale-out/balancer.js';
import { Topology } from '../../tools/scale-out/topology.js';
import { MessageLedger } from '../../tools/soak/ledger.js';
import { FrameIds } from '../../src/api/live/frame-id.js';
import { cursorKeys } from '../../src/api/pagination/cursor-keys.js';
import { compareLiveFrames, framesInStore, sawNoGap, type StreamFrame } from '../../tools/soak/live-check.js';
import { provisionSimulatedAgents } from '../../tools/soak/provision.js';
import { checkReadings } from '../../tools/soak/readings-check.js';
import { compareWithReplay } from '../../tools/soak/replay-check.js';
import type { ServiceProcess } from '../../tools/soak/service-process.js';
import { simulatorDrained } from '../../tools/soak/settle.js';
import { SoakApi } from '../../tools/soak/soak-api.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { eventStoreOver } from '../support/event-store.js';
import { openLive, type OpenLive } from '../support/live.js';
import { REDIS_URL, dropNamespace, requireRedis, testNamespace } from '../support/redis.js';
import { runDirectory } from '../support/run-directory.js';

const AGENTS = 10;
const DEVICES = 3;
/** Readings per second per device: about 80 messages per second in all, on two cores beside 8 processes. */
const RATE = 2;
const RUN_MS = 60_000;
const PARTITIONS = 4;
const HEARTBEAT_MS = 500;
/** The agent that loses its network for good when its broker dies: its will must mark it offline. */
const DEAD = 8;
const MOVED = 0;
const PERMITTED = 1;
const COMMANDED = 3;

/** The bounds docs/deployment.md documents for each failover. */
const BOUNDS_MS = {
  brokerReconnect: 10_000,
  projectorTakeover: 5_000,
  schedulerTakeover: 7_000,
  staleSessionClosed: 5_000,
  deadAgentOffline: 10_000,
};

describe('scale-out: 2 ingress, 2 api, 2 projector (P = 4) and 2 scheduler processes on one PostgreSQL and Redis', function () {
  this.timeout(600_000);
  let db: TestDatabase | undefined;
  let namespace: string;
  let topology: Topology | undefined;
  let balancer: TcpBalancer | undefined;
  const sims: EdgeSim[] = [];
  const streams: OpenLive[] = [];

  before(async function () {
    await requireRedis(this);
  });

  after(async function () {
    for (const stream of streams) stream.close();
    await Promise.all(sims.map((sim) => sim.stop(1000).catch(() => undefined)));
    balancer?.close();
    await topology?.stop();
    await db?.drop();
    if (namespace) await dropNamespace(namespace);
  });

  it('keeps every reading, the read models, downlinks, the live stream and connectivity right through kills and a move', async function () {
    db = await freshDatabase();
    const store = eventStoreOver(db, { idlePollMs: 50 });
    namespace = testNamespace('scale');
    const dataDir = await mkdtemp(path.join(await runDirectory(), 'scale-out-'));
    const { projectId, agents } = await provisionSimulatedAgents(store, {
      dataDir,
      brokerUrl: 'mqtts://127.0.0.1:8883', // each simulator dials its balancer front instead
      seed: 1200,
      devices: DEVICES,
      agents: AGENTS,
    });
    const credentials = await createClient(store, new ClientSecretHasher(db.pool), {
      projectId,
      scopes: ['telemetry:live', 'commands:write', 'grants:admin', 'devices:write', 'devices:read'],
      authMethod: 'post',
      name: 'scale-out test',
    });

    topology = await Topology.start({
      databaseUrl: db.url,
      dataDir,
      redisUrl: REDIS_URL,
      namespace,
      ingress: 2,
      api: 2,
      projector: 2,
      scheduler: 2,
      partitions: PARTITIONS,
      heartbeatMs: HEARTBEAT_MS,
    });
    const [brokerA, brokerB] = topology.of('ingress') as [ServiceProcess, ServiceProcess];
    const [projectorA, projectorB] = topology.of('projector') as [ServiceProcess, ServiceProcess];
    const apiUrls = topology.httpPorts.map((port) => `http://127.0.0.1:${port}`);
    const signal = AbortSignal.timeout(540_000);
    const api = apiUrls.map((url) => new SoakApi(url, credentials, signal)) as [SoakApi, SoakApi];

    // Agents spread over both brokers through the balancer, agent i on broker i mod 2.
    balancer = new TcpBalancer(topology.mqttPorts);
    const fronts: BalancerFront[] = [];
    const ledger = new MessageLedger();
    const permits = agents.map(() => [] as string[]);
    const commands = agents.map(() => [] as string[]);
    for (const [i, agent] of agents.entries()) {
      const front = await balancer.front(i % 2);
      fronts.push(front);
      const sim = new EdgeSim({
        files: agent.files,
        devices: DEVICES,
        rate: RATE,
        seed: agent.seed,
        brokerUrl: `mqtts://127.0.0.1:${front.port}`,
        backoff: { initialMs: 100, maxMs: 1000 },
        queueLimit: 1_000_000,
      });
      ledger.attach(sim);
      sim.on('permit', (p: { sessionId: string }) => permits[i]!.push(p.sessionId));
      sim.on('command', (c: { commandId: string }) => commands[i]!.push(c.commandId));
      sims.push(sim);
    }
    for (const sim of sims) sim.start();
    const startedAt = Date.now();
    await until('every agent connected and its fleet known', 60_000, () =>
      sims.every((sim) => sim.stats().connected && sim.fleet().every((d) => d.publicId !== undefined)),
    ).catch((error: Error) => {
      const agentsNow = sims.map((sim) => ({
        connected: sim.stats().connected,
        adopted: sim.stats().adopted,
      }));
      throw new Error(`${error.message}: ${JSON.stringify(agentsNow)}`);
    });
    expect(fronts.map((f) => f.connectedTo)).to.deep.equal(agents.map((_, i) => [i % 2]));

    // A live-stream client on the first API node from now on.
    const firstStream = await openLive(apiUrls[0]!, {
      token: await api[0].token(),
      query: 'types=telemetry',
    });
    streams.push(firstStream);
    expect(firstStream.status).to.equal(200);
    await firstStream.waitFor('telemetry frames on API node 1', () => firstStream.frames('telemetry').length);

    // 1. Broker A dies. Agent DEAD loses its network for good at the same moment; the others reconnect to B.
    fronts[DEAD]!.block();
    const brokerKilledAt = Date.now();
    await brokerA.kill();
    await until('every other agent reconnected to broker B', BOUNDS_MS.brokerReconnect, () =>
      sims.every((sim, i) => i === DEAD || (sim.stats().connected && fronts[i]!.connectedTo[0] === 1)),
    );
    // B publishes A's wills once A has missed 3 heartbeats. The will of DEAD marks its hub offline; those of
    // the agents already back on B are fenced off by their new connections.
    const hubs = agents.map((a) => a.hubId);
    const reconnectedMs = Date.now() - brokerKilledAt;
    await until(
      'the dead agent marked offline by its will',
      BOUNDS_MS.deadAgentOffline,
      async () => (await hubConnectivity(db!, [hubs[DEAD]!]))[hubs[DEAD]!] === 'offline',
    );
    const deadOfflineMs = Date.now() - brokerKilledAt;
    await until('a stale will fenced off on broker B', 10_000, () => fenced(brokerB) > 0);
    brokerA.start();
    await until('broker A up again', 60_000, () => brokerA.ready);

    // 2. One projector process dies: the other takes all 2 x 4 partitions, then shares them again.
    const sharedEvenly = () =>
      allPartitionLocks().filter((lock) => leads(projectorA, lock)).length === PARTITIONS &&
      allPartitionLocks().filter((lock) => leads(projectorB, lock)).length === PARTITIONS;
    await until('the partitions shared, 4 each', 30_000, sharedEvenly);
    const projectorKilledAt = Date.now();
    await projectorA.kill();
    await until('projector B leading every partition', 30_000, () =>
      allPartitionLocks().every((lock) => leads(projectorB, lock)),
    );
    const projectorTakeoverMs = Date.now() - projectorKilledAt;
    projectorA.start();
    await until('the partitions shared again, 4 each', 60_000, sharedEvenly);

    // 3. The scheduler leader dies: the standby takes over.
    const schedulers = topology.of('scheduler');
    const leader = await until('a scheduler leader', 30_000, () =>
      schedulers.find((s) => leads(s, 'scheduler')),
    );
    const standby = schedulers.find((s) => s !== leader)!;
    const schedulerKilledAt = Date.now();
    await leader.kill();
    await until('the standby scheduler leading', 30_000, () => leads(standby, 'scheduler'));
    const schedulerTakeoverMs = Date.now() - schedulerKilledAt;
    leader.start();

    // 4. A pairing window through API node 1 for an agent on broker B; 5. a command through API node 1 to
    // an agent on broker B.
    expect(fronts[PERMITTED]!.connectedTo).to.deep.equal([1]);
    // Provisioning left the adoption window open on every hub: close it first.
    const open = await api[0].untilAnswered('POST', '/v1/pairing/sessions', { hubId: hubs[PERMITTED] });
    expect(open.status).to.equal(409);
    const provisioning = (open.body as { sessionId: string }).sessionId;
    expect(
      (await api[0].untilAnswered('DELETE', `/v1/pairing/sessions/${provisioning}`, undefined)).status,
    ).to.equal(200);
    const window = await api[0].untilAnswered('POST', '/v1/pairing/sessions', {
      hubId: hubs[PERMITTED],
      durationSeconds: 60,
    });
    expect(window.status, JSON.stringify(window.body)).to.equal(201);
    const sessionId = (window.body as { session: { sessionId: string } }).session.sessionId;
    await until('the permit at the agent', 15_000, () => permits[PERMITTED]!.includes(sessionId));

    const plug = sims[COMMANDED]!.fleet().find((d) => d.capabilities.includes('binary.switch'))!.publicId!;
    const grant = await api[0].untilAnswered('PUT', `/v1/devices/${plug}/capability-grants`, {
      capabilityKey: 'binary.switch',
      write: true,
    });
    expect(grant.status, JSON.stringify(grant.body)).to.equal(200);
    const command = await api[0].untilAnswered(
      'POST',
      `/v1/devices/${plug}/commands`,
      { capabilityKey: 'binary.switch', value: true, mode: 'imperative', ttlSeconds: 60 },
      { headers: { 'Idempotency-Key': randomUUID() } },
    );
    expect(command.status, JSON.stringify(command.body)).to.equal(201);
    const commandId = (command.body as { command: { commandId: string } }).command.commandId;
    await until('the command at the agent', 15_000, () => commands[COMMANDED]!.includes(commandId));

    // 6. An agent moves from broker B to broker A; its old connection on B is left half-open.
    expect(fronts[MOVED]!.connectedTo).to.deep.equal([1]);
    const movedAt = Date.now();
    fronts[MOVED]!.move(0);
    await until(
      'the moved agent on broker A',
      15_000,
      () => fronts[MOVED]!.connectedTo[0] === 0 && sims[MOVED]!.stats().connected,
    );
    await until('broker B closed the old connection', BOUNDS_MS.staleSessionClosed, () =>
      fronts[MOVED]!.stale.every((s) => s.closedAtMs !== undefined),
    );
    expect(fronts[MOVED]!.stale).to.have.length(1);
    const staleClosedMs = fronts[MOVED]!.stale[0]!.closedAtMs! - movedAt;

    // 7. The live stream resumes on API node 2 from the last frame node 1 sent.
    firstStream.close();
    await firstStream.ended;
    const before = telemetryFrames(firstStream);
    const secondStream = await openLive(apiUrls[1]!, {
      token: await api[1].token(),
      query: 'types=telemetry',
      headers: { 'Last-Event-ID': before.at(-1)!.id },
    });
    streams.push(secondStream);
    expect(secondStream.status).to.equal(200);

    // The readings go on to the end of the run, then every agent still connected must show online.
    await until('the run to end', RUN_MS + 60_000, () => Date.now() - startedAt >= RUN_MS);
    let seen: Record<string, string> = {};
    await until(
      'connectivity projected: live agents online, the dead one offline',
      30_000,
      async () => {
        seen = await hubConnectivity(db!, hubs);
        return hubs.every((hub, i) => seen[hub] === (i === DEAD ? 'offline' : 'online'));
      },
      () => `agent by agent: ${hubs.map((hub, i) => `${i} ${seen[hub] ?? 'no row'}`).join(', ')}`,
    );
    const drained = await Promise.all(
      sims.map((sim, i) => (i === DEAD ? true : simulatorDrained(sim, 60_000))),
    );
    expect(drained, 'every live agent got every reading acknowledged').to.not.include(false);
    await Promise.all(sims.map((sim) => sim.stop(2000)));

    // The second stream catches up with the store's last telemetry frame.
    const ids = await FrameIds.load(cursorKeys(db.pool));
    let expected = await framesInStore(store, ids, projectId, ['telemetry']);
    await until('the resumed stream at the store head', 60_000, async () => {
      expected = await framesInStore(store, ids, projectId, ['telemetry']);
      return telemetryFrames(secondStream).at(-1)?.id === expected.at(-1)?.id;
    });
    secondStream.close();
    await topology.stop();
    topology = undefined;

    for (const projector of [
      ...partitionsOf(stateFamily, PARTITIONS),
      ...partitionsOf(telemetryFamily, PARTITIONS),
      devicesProjector(),
    ])
      await catchUpProjector(db.pool, store, projector);
    const readings = await checkReadings(db.pool, store, ledger);
    const { examples: _examples, ...counts } = readings;
    expect(readings.messagesAcked, 'readings acknowledged').to.be.above(1000);
    expect(counts).to.include({
      lost: 0,
      altered: 0,
      unknown: 0,
      duplicated: 0,
      projectionMissing: 0,
      projectionExtra: 0,
    });
    expect(readings.readingsProjected).to.equal(readings.readingsStored);

    const tables = await compareWithReplay(db.pool, store, [
      stateProjector(),
      telemetryProjector(),
      devicesProjector(),
    ]);
    expect(
      tables.filter((t) => !t.equal),
      'read models equal a single-process replay',
    ).to.deep.equal([]);

    expect(
      permits[PERMITTED]!.filter((s) => s === sessionId),
      'permits delivered',
    ).to.have.length(1);
    expect(
      commands[COMMANDED]!.filter((c) => c === commandId),
      'commands delivered',
    ).to.have.length(1);

    const received: StreamFrame[] = [...before, ...telemetryFrames(secondStream)];
    const live = compareLiveFrames([received], expected);
    expect(received.length, 'frames received across both API nodes').to.be.above(100);
    expect(sawNoGap(live), JSON.stringify(live)).to.equal(true);

    const figures = {
      brokerReconnectMs: reconnectedMs,
      deadAgentOfflineMs: deadOfflineMs,
      projectorTakeoverMs,
      schedulerTakeoverMs,
      staleSessionClosedMs: staleClosedMs,
    };
    console.log(
      `      failover: ${JSON.stringify(figures)}; ${readings.messagesAcked} messages acknowledged`,
    );
    expect(reconnectedMs).to.be.below(BOUNDS_MS.brokerReconnect);
    expect(projectorTakeoverMs).to.be.below(BOUNDS_MS.projectorTakeover);
    expect(schedulerTakeoverMs).to.be.below(BOUNDS_MS.schedulerTakeover);
  });
});

function telemetryFrames(stream: OpenLive): StreamFrame[] {
  return stream.items.flatMap((item) =>
    item.kind === 'event' && item.event === 'telemetry' && item.id !== undefined
      ? [{ id: item.id, text: item.data }]
      : [],
  );
}

function allPartitionLocks(): string[] {
  return [stateFamily, telemetryFamily].flatMap((family) =>
    partitionsOf(family, PARTITIONS).map((p) => `projector:${p.name}`),
  );
}

/** Whether the process's last word on `lock` was that it leads it (and it is still running). */
function leads(process: ServiceProcess, lock: string): boolean {
  if (!process.running) return false;
  const mention = `"lock":"${lock}"`;
  const last = process.kept.findLast((k) => k.run === process.starts && k.line.includes(mention));
  return last?.line.includes('"msg":"elected: this instance is active"') ?? false;
}

function fenced(process: ServiceProcess): number {
  return process.kept.filter((k) => k.line.includes('the end of an older connection ignored')).length;
}

async function hubConnectivity(db: TestDatabase, hubIds: readonly string[]): Promise<Record<string, string>> {
  const { rows } = await db.pool.query<{ device_id: string; connectivity: string | null }>(
    'SELECT device_id, connectivity FROM device_presence WHERE device_id = ANY ($1::text[])',
    [hubIds],
  );
  return Object.fromEntries(rows.map((r) => [r.device_id, r.connectivity ?? 'unknown']));
}

/**
 * Waits for `probe` to hold (a value other than undefined, null or false), up to `ms`; returns it. On a
 * timeout the error carries `lastSeen()`, what the probe last found, so a failed run says why.
 */
async function until<T>(
  what: string,
  ms: number,
  probe: () => T | Promise<T>,
  lastSeen?: () => string,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value as NonNullable<T>;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${ms} ms waiting for ${what}${lastSeen ? `; ${lastSeen()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
