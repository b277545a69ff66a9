import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { agentFilesFor, writeAgentFiles } from '../src/agents/agent-files.js';
import { registerAgent } from '../src/agents/register.js';
import { loadConfig } from '../src/config.js';
import { Worker } from 'node:worker_threads';
import type { AckedMessage } from '../src/edge-sim/index.js';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import { createProject } from '../src/identity/projects.js';
import { createLogger } from '../src/infra/logger.js';
import type { Pool } from '../src/infra/postgres/pool.js';
import { loadOrCreateAuthority } from '../src/ingress/pki/authority.js';
import { catchUpProjector } from '../src/projections/catch-up.js';
import { createSite } from '../src/registry/sites.js';
import { allProjectors } from '../src/runtime/projectors.js';
import { startService } from '../src/runtime/service.js';
import { adoptSimulatedFleet } from '../tests/support/edge-agent.js';
import { freePort } from '../tests/support/edge-service.js';
import { benchDatabase, machine, report } from './support.js';

/**
 * End-to-end ingest: AGENTS simulated edge agents with DEVICES adopted devices each publish QoS 1 messages
 * of 3 readings over mTLS MQTT to the in-process broker; the ingress appends them to the event store and
 * the projectors file them into the state and telemetry read models. Figures: acknowledged messages and
 * readings per second, sustained over SECONDS after a warm-up, and the projection lag from publish to the
 * reading being visible in the state read model (sampled, one message in SAMPLE_EVERY).
 */
const AGENTS = Number(process.env.BENCH_AGENTS ?? 10);
const DEVICES = Number(process.env.BENCH_DEVICES ?? 100);
const RATES = (process.env.BENCH_INGEST_RATES ?? '6000').split(',').map(Number);
const SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? 30);
const WARMUP_SECONDS = 5;
const SAMPLE_EVERY = 100;
const READINGS_PER_MESSAGE = 3;

export async function ingestBenchmarks(): Promise<void> {
  for (const rate of RATES) await ingestAt(rate);
}

async function ingestAt(offered: number): Promise<void> {
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'devcloud-bench-'));
  const port = await freePort();
  const context = {
    machine: machine(),
    postgres: db.serverVersion,
    agents: AGENTS,
    devicesPerAgent: DEVICES,
  };
  let service: Awaited<ReturnType<typeof startService>> | undefined;
  let stopLoad = async () => {};
  try {
    const agents = await provision(store, dataDir, port);
    for (const projector of allProjectors()) await catchUpProjector(db.pool, store, projector);
    const logger = createLogger('warn', process.stderr);
    const config = loadConfig({
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      MQTT_PORT: String(port),
      MQTT_HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    });
    service = await startService(config, logger, ['ingress', 'projector']);

    // A worker does not inherit tsx's loader: it registers it first, as bin/devcloud.js does.
    const script = new URL('./ingest-agents.worker.ts', import.meta.url).href;
    const bootstrap = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(script)}); })`;
    const load = new Worker(bootstrap, {
      eval: true,
      workerData: {
        agents,
        devices: DEVICES,
        readingsPerSecondPerDevice: (offered / (AGENTS * DEVICES)) * READINGS_PER_MESSAGE,
        readingsPerMessage: READINGS_PER_MESSAGE,
        sampleEvery: SAMPLE_EVERY,
      },
    });
    const exited = new Promise((resolve) => load.once('exit', resolve));
    stopLoad = async () => {
      load.postMessage({ kind: 'stop' });
      await Promise.race([reply(load, 'stopped').catch(() => undefined), exited, sleep(10_000)]);
      await load.terminate();
    };
    const count = async () => {
      load.postMessage({ kind: 'count' });
      return (await reply(load, 'count')) as { acked: number; backlog: number };
    };
    // Each agent learns its devices' public ids when it reports online; then it publishes for them.
    await reply(load, 'ready');
    await sleep(WARMUP_SECONDS * 1000);

    const lags: number[] = [];
    const sampler = new LagSampler(db.pool, lags);
    load.on('message', (m: { kind: string; message?: AckedMessage }) => {
      if (m.kind === 'sample') sampler.watch(m.message!);
    });
    load.postMessage({ kind: 'sample', on: true });
    const start = await count();
    const startedAt = performance.now();
    await sleep(SECONDS * 1000);
    const end = await count();
    const seconds = (performance.now() - startedAt) / 1000;
    load.postMessage({ kind: 'sample', on: false });
    await sampler.settled();
    const messages = end.acked - start.acked;
    const backlog = end.backlog;

    const buckets = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM telemetry_1m');
    report({
      figure: 'ingest.e2e.throughput',
      offeredMessagesPerSecond: offered,
      messagesPerSecond: Math.round(messages / seconds),
      readingsPerSecond: Math.round((messages * READINGS_PER_MESSAGE) / seconds),
      readingsPerMessage: READINGS_PER_MESSAGE,
      seconds: Math.round(seconds),
      agentBacklogAtEnd: backlog,
      minuteBuckets: Number(buckets.rows[0]!.n),
      ...context,
    });
    lags.sort((a, b) => a - b);
    const at = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] ?? null;
    report({
      figure: 'ingest.e2e.projection_lag',
      offeredMessagesPerSecond: offered,
      from: 'publish',
      to: 'state read model',
      samples: lags.length,
      p50Ms: at(0.5),
      p95Ms: at(0.95),
      p99Ms: at(0.99),
      maxMs: lags.at(-1) ?? null,
      ...context,
    });
  } finally {
    await stopLoad();
    await service?.stop();
    await store.close();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** One project and site; AGENTS agents, each with DEVICES devices adopted through its hub. */
async function provision(store: PostgresEventStore, dataDir: string, port: number) {
  const { projectId } = await createProject(store, { name: 'bench' });
  const { siteId } = await createSite(store, { projectId, name: 'Bench', timezone: 'Europe/Amsterdam' });
  const authority = await loadOrCreateAuthority(path.join(dataDir, 'pki'));
  return Promise.all(
    Array.from({ length: AGENTS }, async (_, i) => {
      const agent = await registerAgent(store, authority, { projectId, siteId });
      await adoptSimulatedFleet(store, {
        projectId,
        hubId: agent.hubId,
        seed: i + 1,
        devices: DEVICES,
        now: new Date(),
        durationSeconds: 600,
      });
      const files = agentFilesFor(agent, authority.certificatePem, `mqtts://127.0.0.1:${port}`);
      await writeAgentFiles(path.join(dataDir, `agent-${i}`), files);
      return files;
    }),
  );
}

const LAST_SEEN = 'SELECT last_seen_at FROM device_presence WHERE device_id = $1';

/**
 * For each sampled message: the time from its publish until its device's state shows a reading at least
 * that recent (the projector files a device's readings in order, so that one is visible too).
 */
class LagSampler {
  readonly #watching = new Set<Promise<void>>();

  constructor(
    private readonly pool: Pool,
    private readonly lags: number[],
  ) {}

  watch(message: AckedMessage): void {
    const w = this.#watch(message);
    this.#watching.add(w);
    void w.finally(() => this.#watching.delete(w));
  }

  async settled(): Promise<void> {
    while (this.#watching.size > 0) await Promise.all([...this.#watching]);
  }

  async #watch(m: AckedMessage): Promise<void> {
    for (;;) {
      const { rows } = await this.pool.query<{ last_seen_at: Date | null }>(LAST_SEEN, [m.deviceId]);
      const seen = rows[0]?.last_seen_at?.getTime();
      if (seen !== undefined && seen >= m.createdAtMs) {
        this.lags.push(Date.now() - m.createdAtMs);
        return;
      }
      if (Date.now() - m.createdAtMs > 120_000) {
        this.lags.push(Number.POSITIVE_INFINITY);
        return;
      }
      await sleep(5);
    }
  }
}

function reply(worker: Worker, kind: string): Promise<unknown> {
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
