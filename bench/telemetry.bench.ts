import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createApiApp } from '../src/api/app.js';
import { loadConfig } from '../src/config.js';
import { ReadingsRecorded, readingsStreamName } from '../src/domain/readings/index.js';
import { PostgresEventStore } from '../src/eventstore/postgres/adapter.js';
import type { BatchEntry } from '../src/eventstore/port.js';
import { createLogger } from '../src/infra/logger.js';
import { createMetrics } from '../src/infra/metrics.js';
import { catchUpProjector } from '../src/projections/catch-up.js';
import { telemetryProjector } from '../src/projections/telemetry/projector.js';
import { deviceOf, siteOf } from '../tests/support/registry.js';
import { allProjectors } from '../src/runtime/projectors.js';
import { projectWithClient, requestToken } from '../tests/support/tenants.js';
import { reply } from './ingest.bench.js';
import { benchDatabase, benchWorker, machine, rate, report } from './support.js';

/**
 * Telemetry query latency through the real HTTP endpoint with a real token, for one device and one
 * capability: 1 day at 1m, 30 days at 1h, 1 year at 1d. The buckets are seeded through the real projector
 * from ReadingsRecorded events: a year at one reading per 10 minutes, and the last day at one per 10 s.
 */
const QUERIES = Number(process.env.BENCH_TELEMETRY_QUERIES ?? 500);
const WARM_UP = 50;
const DAY_MS = 86_400_000;
const CAPABILITY = 'environment.temperature';

export async function telemetryBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const store = new PostgresEventStore(db.pool, { connectionString: db.url });
  const context = { machine: machine(), postgres: db.serverVersion, adapter: 'postgres' };
  let server: Server | undefined;
  try {
    const { projectId, client } = await projectWithClient(store, db.pool, ['telemetry:read'], {
      name: 'bench',
    });
    const siteId = await siteOf({ store }, projectId, 'Berlin', 'Europe/Berlin');
    const deviceId = await deviceOf({ store }, projectId, siteId, { capabilities: [CAPABILITY] });
    for (const projector of allProjectors()) {
      if (projector.name !== 'telemetry') await catchUpProjector(db.pool, store, projector);
    }

    const end = Math.floor(Date.now() / 60_000) * 60_000;
    const events = await seed(store, { deviceId, projectId, siteId, end });
    const started = process.hrtime.bigint();
    await catchUpProjector(db.pool, store, telemetryProjector(), 2000);
    report({
      figure: 'projection.telemetry.seed',
      events,
      readingsPerEvent: 1,
      batchSize: 2000,
      eventsPerSecond: rate(events, started),
      ...context,
    });

    const config = loadConfig({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_SECOND: '1000000',
      RATE_LIMIT_BURST: '1000000',
    });
    const logger = createLogger('silent');
    const app = createApiApp({ config, logger, metrics: createMetrics(), pool: db.pool, store });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const address = server.address();
    const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const token = await requestToken(baseUrl, client, 'post', undefined);

    const figures = [
      { figure: 'telemetry.query.1d_at_1m', resolution: '1m', windowDays: 1 },
      { figure: 'telemetry.query.30d_at_1h', resolution: '1h', windowDays: 30 },
      { figure: 'telemetry.query.1y_at_1d', resolution: '1d', windowDays: 365 },
    ];
    for (const f of figures) {
      const query = new URLSearchParams({
        from: new Date(end - f.windowDays * DAY_MS).toISOString(),
        to: new Date(end).toISOString(),
        resolution: f.resolution,
        capabilities: CAPABILITY,
        aggregation: 'avg',
      });
      const { latencies, points } = await queryFromClientThread({
        url: `${baseUrl}/v1/devices/${deviceId}/telemetry?${query}`,
        token,
        warmUp: WARM_UP,
        queries: QUERIES,
      });
      report({
        figure: f.figure,
        resolution: f.resolution,
        windowDays: f.windowDays,
        points,
        queries: QUERIES,
        p50Ms: percentile(latencies, 0.5),
        p95Ms: percentile(latencies, 0.95),
        p99Ms: percentile(latencies, 0.99),
        ...context,
      });
    }
  } finally {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await store.close();
    await db.drop();
  }
}

/** A year at one reading per 10 minutes, then the last day at one per 10 seconds; returns the event count. */
async function seed(
  store: PostgresEventStore,
  device: { deviceId: string; projectId: string; siteId: string; end: number },
): Promise<number> {
  const times: number[] = [];
  const denseFrom = device.end - DAY_MS;
  for (let t = device.end - 365 * DAY_MS; t < denseFrom; t += 600_000) times.push(t);
  for (let t = denseFrom; t < device.end; t += 10_000) times.push(t);
  for (let i = 0; i < times.length; i += 2000) {
    const entries: BatchEntry[] = times.slice(i, i + 2000).map((t) => ({
      streamName: readingsStreamName(device.deviceId),
      event: {
        id: randomUUID(),
        type: ReadingsRecorded.type,
        data: {
          deviceId: device.deviceId,
          projectId: device.projectId,
          siteId: device.siteId,
          agentId: 'agt_bench',
          receivedAt: new Date(t).toISOString(),
          // A daily swing around 20 °C, rounded to what a sensor reports.
          readings: [
            {
              capability: CAPABILITY,
              value: Math.round(200 + 50 * Math.sin((t / DAY_MS) * 2 * Math.PI)) / 10,
            },
          ],
        },
      },
    }));
    await store.appendBatch(entries);
  }
  return times.length;
}

/** Runs the queries on the client thread (telemetry-client.worker.ts); its latencies, sorted. */
async function queryFromClientThread(input: {
  url: string;
  token: string;
  warmUp: number;
  queries: number;
}): Promise<{ latencies: number[]; points: number }> {
  const client = benchWorker('./telemetry-client.worker.ts', input);
  try {
    const result = (await reply(client, 'done')) as { latencies: number[]; points: number };
    result.latencies.sort((a, b) => a - b);
    return result;
  } finally {
    await client.terminate();
  }
}

function percentile(sorted: readonly number[], p: number): number {
  const value = sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? NaN;
  return Math.round(value * 100) / 100;
}
