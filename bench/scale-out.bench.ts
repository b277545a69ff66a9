import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import type { Pool } from '../src/infra/postgres/pool.js';
import { catchUpProjector, firstPending } from '../src/projections/catch-up.js';
import { partitionsOf } from '../src/projections/partitions.js';
import type { Projector } from '../src/projections/projector.js';
import { stateFamily } from '../src/projections/state/projector.js';
import { telemetryFamily } from '../src/projections/telemetry/projector.js';
import { COUNT_RAW_READINGS } from '../src/projections/telemetry/sql.js';
import { allProjectors } from '../src/runtime/projectors.js';
import { Topology } from '../tools/scale-out/topology.js';
import { projectorsCaughtUp } from '../tools/soak/settle.js';
import { round } from './cpu.js';
import { READINGS_PER_MESSAGE, WARMUP_SECONDS, provisionFleet, reply } from './ingest.bench.js';
import { REDIS_URL, dropNamespace, redisReachable } from '../tests/support/redis.js';
import { undoable } from './interrupt.js';
import { benchDatabase, benchDirectory, benchWorker, machine, report } from './support.js';

/**
 * The scale-out topology (tools/scale-out/topology.ts) with 1 or 2 broker nodes and 1 or 2 projector
 * processes (P = 4 partitions each for state and telemetry), 1 api and 1 scheduler process, all as their
 * own `devcloud serve --roles <role>` processes, under the same offered load from AGENTS simulated agents
 * (on a worker thread; agent i dials broker i mod brokers). Per topology, over SECONDS after a warm-up:
 * - scaleout.ingest.<brokers>b<projectors>p[.redis]: acknowledged messages/s (what the brokers stored), projected messages/s (what reached
 *   the telemetry read model: its raw readings / 3), the read models' lag sampled once a second (the age of
 *   the oldest event any partition has not projected; median and max), and how long they then took to
 *   hold everything.
 * The 1-broker topologies run with and without Redis (CLUSTER_REDIS_URL), which measures what routing every
 * uplink through Redis costs. Needs Redis at REDIS_URL (default 127.0.0.1:6379) for the clustered ones.
 */
const AGENTS = Number(process.env.BENCH_AGENTS ?? 10);
const DEVICES = Number(process.env.BENCH_DEVICES ?? 100);
const OFFERED = Number(process.env.BENCH_SCALEOUT_RATE ?? 6000);
const SECONDS = Number(process.env.BENCH_SCALEOUT_SECONDS ?? 20);
const PARTITIONS = 4;
const READY_MS = 120_000;

interface Shape {
  readonly brokers: number;
  readonly projectors: number;
  readonly redis: boolean;
}

const SHAPES: readonly Shape[] = [
  { brokers: 1, projectors: 1, redis: false },
  { brokers: 1, projectors: 1, redis: true },
  { brokers: 1, projectors: 2, redis: false },
  { brokers: 2, projectors: 1, redis: true },
  { brokers: 2, projectors: 2, redis: true },
];

export async function scaleOutBenchmarks(): Promise<void> {
  const redis = await redisReachable();
  for (const shape of SHAPES) {
    if (shape.redis && !redis) {
      report({ figure: figureName(shape), ...shape, skipped: `no Redis at ${new URL(REDIS_URL).host}` });
      continue;
    }
    await runShape(shape);
  }
}

async function runShape(shape: Shape): Promise<void> {
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  const scratch = await benchDirectory('devcloud-bench-scale-');
  const dataDir = scratch.path;
  const namespace = `devcloud_bench_${process.pid}_${Date.now()}`;
  const forgetNamespace = undoable(async () => {
    if (shape.redis) await dropNamespace(namespace);
  });
  let stopTopology = async () => {};
  let load: Worker | undefined;
  try {
    const { agents } = await provisionFleet(store, dataDir, 8883, AGENTS, DEVICES);
    // The read models hold the fleet before the topology starts, as the end-to-end bench does: the
    // measurement starts from a service that is up to date.
    for (const projector of allProjectors({ state: PARTITIONS, telemetry: PARTITIONS }))
      await catchUpProjector(db.pool, store, projector);
    const topology = await Topology.start({
      databaseUrl: db.url,
      dataDir,
      redisUrl: shape.redis ? REDIS_URL : undefined,
      namespace,
      ingress: shape.brokers,
      api: 1,
      projector: shape.projectors,
      scheduler: 1,
      partitions: PARTITIONS,
      heartbeatMs: 5000,
    });
    stopTopology = undoable(() => topology.stop());
    const ports = topology.mqttPorts;
    const dialing = agents.map((files, i) => ({
      ...files,
      connection: { ...files.connection, brokerUrl: `mqtts://127.0.0.1:${ports[i % ports.length]}` },
    }));
    load = benchWorker('./ingest-agents.worker.ts', {
      agents: dialing,
      devices: DEVICES,
      readingsPerSecondPerDevice: (OFFERED / (AGENTS * DEVICES)) * READINGS_PER_MESSAGE,
      readingsPerMessage: READINGS_PER_MESSAGE,
      sampleEvery: 1_000_000,
    });
    const worker = load;
    const count = async () => {
      worker.postMessage({ kind: 'count' });
      return (await reply(worker, 'count')) as { acked: number; backlog: number };
    };
    // Each agent learns its devices' public ids when it reports online; a topology in which one never does
    // is reported as such rather than waited on for ever.
    const ready = await Promise.race([
      reply(worker, 'ready').then(() => true),
      sleep(READY_MS).then(() => false),
    ]);
    if (!ready) {
      const { adopted } = (await count()) as unknown as { adopted: number[] };
      report({ figure: figureName(shape), ...shape, failed: 'agents never learnt every device', adopted });
      return;
    }
    await sleep(WARMUP_SECONDS * 1000);

    const projectors = [
      ...partitionsOf(stateFamily, PARTITIONS),
      ...partitionsOf(telemetryFamily, PARTITIONS),
    ];
    const start = {
      acked: (await count()).acked,
      projected: await rawReadings(db.pool),
      at: performance.now(),
    };
    // The read models' lag (their oldest unprojected event's age, over every partition), once a second.
    const lags: number[] = [];
    const windowEnds = Date.now() + SECONDS * 1000;
    while (Date.now() < windowEnds) {
      const sampled = Date.now();
      lags.push(await worstLag(db.pool, store, projectors));
      await sleep(Math.max(0, Math.min(1000 - (Date.now() - sampled), windowEnds - Date.now())));
    }
    const end = { ...(await count()), projected: await rawReadings(db.pool), at: performance.now() };
    lags.sort((a, b) => a - b);
    worker.postMessage({ kind: 'stop' });
    await Promise.race([reply(worker, 'stopped').catch(() => undefined), sleep(10_000)]);
    const stoppedAt = performance.now();
    const caughtUp = await projectorsCaughtUp(db.pool, store, projectors, 300_000);
    const seconds = (end.at - start.at) / 1000;
    report({
      figure: figureName(shape),
      ...shape,
      apiProcesses: 1,
      schedulerProcesses: 1,
      partitions: PARTITIONS,
      offeredMessagesPerSecond: OFFERED,
      messagesPerSecond: Math.round((end.acked - start.acked) / seconds),
      projectedMessagesPerSecond: Math.round(
        (end.projected - start.projected) / READINGS_PER_MESSAGE / seconds,
      ),
      agentBacklogAtEnd: end.backlog,
      lagP50Seconds: round(lags[Math.floor(lags.length / 2)] ?? 0, 2),
      lagMaxSeconds: round(lags.at(-1) ?? 0, 2),
      lagSamples: lags.length,
      catchUpSeconds: caughtUp ? round((performance.now() - stoppedAt) / 1000, 1) : null,
      seconds: Math.round(seconds),
      agents: AGENTS,
      devicesPerAgent: DEVICES,
      machine: machine(),
      postgres: db.serverVersion,
    });
  } finally {
    await load?.terminate();
    await stopTopology();
    await store.close();
    await db.drop();
    await scratch.remove();
    await forgetNamespace();
  }
}

/** One figure per topology, so bench:compare keeps them apart: scaleout.ingest.<b>b<p>p[.redis]. */
function figureName(shape: Shape): string {
  return `scaleout.ingest.${shape.brokers}b${shape.projectors}p${shape.redis ? '.redis' : ''}`;
}

async function rawReadings(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(COUNT_RAW_READINGS);
  return rows[0]!.n;
}

/**
 * The oldest unprojected event's age over every partition, in seconds: one indexed read per partition (the
 * service's lag monitor also counts the waiting events, which would load the machine being measured).
 */
async function worstLag(
  pool: Pool,
  store: PostgresEventStore,
  projectors: readonly Projector[],
): Promise<number> {
  let oldest = Date.now();
  for (const projector of projectors) {
    const pending = await firstPending(pool, store, projector);
    oldest = Math.min(oldest, pending?.recordedAt.getTime() ?? oldest);
  }
  return (Date.now() - oldest) / 1000;
}
