import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import pg from 'pg';
import { createLogger } from '../src/infra/logger.js';
import {
  ensureDatabase,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
} from '../src/infra/postgres/embedded.js';
import { migrate } from '../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../src/eventstore/postgres/functions/install-order.js';
import { createPool, type Pool } from '../src/infra/postgres/pool.js';
import { freePort } from '../src/infra/ports.js';
import { undoable } from './interrupt.js';
import { workerThread } from '../src/infra/worker-thread.js';

/** application_name of the bench's own connections, so CPU meters can leave them out. */
export const BENCH_APPLICATION = 'devcloud-bench';

/**
 * Each component's ceiling measured earlier in this run (events or messages per second), so the end-to-end
 * figures can say which share of each one they use.
 */
export const ceilings = new Map<string, number>();

/**
 * The embedded cluster the benchmarks share while `npm run bench` runs: under DATA_DIR when set, else in a
 * temporary directory of this run's (removed at the end), on a free port, so two runs never share one.
 */
let embedded: Promise<EmbeddedDatabase> | undefined;
let scratch: string | undefined;

function embeddedServer() {
  embedded ??= (async () => {
    if (!process.env.DATA_DIR) {
      scratch = await mkdtemp(path.join(os.tmpdir(), 'devcloud-bench-db-'));
      // As root, PostgreSQL runs as `postgres`, which must reach the cluster directory.
      await chmod(scratch, 0o755);
    }
    return startEmbeddedPostgres({
      dataDir: path.resolve(process.env.DATA_DIR ?? scratch!),
      port: await freePort(),
      logger: createLogger('warn', process.stderr),
      databaseName: 'postgres',
    });
  })();
  return embedded;
}

let released: Promise<void> | undefined;

/**
 * Stops the embedded cluster if this run started one, and removes its temporary directory; once, however
 * often it is called (the end of the run and an interrupt may both ask).
 */
export function releaseBenchServer(): Promise<void> {
  released ??= (async () => {
    try {
      if (embedded) await (await embedded).stop();
    } finally {
      // Also when starting or stopping failed (interrupted, say): nothing of the run's stays behind.
      if (scratch) await rm(scratch, { recursive: true, force: true });
    }
  })();
  return released;
}

/** A throw-away database for one benchmark: on DATABASE_URL's server, or the embedded cluster. */
export async function benchDatabase(): Promise<{
  url: string;
  pool: Pool;
  serverVersion: string;
  drop(): Promise<void>;
}> {
  const adminUrl = process.env.DATABASE_URL ?? (await embeddedServer()).url;
  const name = `devcloud_bench_${randomBytes(4).toString('hex')}`;
  await ensureDatabase(adminUrl, name);
  const u = new URL(adminUrl);
  u.pathname = '/' + name;
  const url = u.toString();
  const pool = createPool(url, { max: 12, applicationName: BENCH_APPLICATION });
  await migrate(pool, EVENT_STORE_FUNCTIONS);
  const serverVersion = (await pool.query<{ v: string }>("SELECT current_setting('server_version') AS v"))
    .rows[0]!.v;
  return {
    url,
    pool,
    serverVersion,
    drop: undoable(async () => {
      await pool.end();
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }),
  };
}

/** A temporary directory for one benchmark, removed by `remove()` or when the run is interrupted. */
export async function benchDirectory(prefix: string): Promise<{ path: string; remove(): Promise<void> }> {
  const made = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { path: made, remove: undoable(() => rm(made, { recursive: true, force: true })) };
}

export function machine() {
  return {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
  };
}

/** One JSON line per figure, on stdout. */
export function report(figure: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(figure) + '\n');
}

export function rate(count: number, startedNs: bigint): number {
  const seconds = Number(process.hrtime.bigint() - startedNs) / 1e9;
  return Math.round(count / seconds);
}

/** A payload the size of a real control-plane event (~200 bytes of JSON). */
export function samplePayload(i: number) {
  return {
    deviceId: `dev_${(i % 5000).toString(36).padStart(8, '0')}`,
    capability: 'actuator.relay',
    value: i % 2 === 0,
    grantedBy: 'cli_2b7f4c9e1a',
    reason: 'maintenance window',
    at: '2026-11-21T10:00:00.000Z',
    sequence: i,
  };
}

/** p50/p95/p99/max in milliseconds, rounded; nulls when there are no values. */
export function percentiles(values: readonly number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted.length === 0 ? null : round1(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  return {
    p50Ms: at(0.5),
    p95Ms: at(0.95),
    p99Ms: at(0.99),
    maxMs: sorted.length ? round1(sorted.at(-1)!) : null,
  };
}

function round1(value: number): number {
  return Number.isFinite(value) ? Math.round(value * 10) / 10 : value;
}

/** A worker thread running one of the benches' TypeScript scripts (`script`, beside this file). */
export function benchWorker(script: string, workerData: unknown): Worker {
  return workerThread(import.meta.url, script.replace(/\.ts$/, ''), workerData);
}

/**
 * `total` items written in batches of `batch` by `writers` concurrent writers: `write(from, count)` writes
 * items from..from+count-1.
 */
export async function inBatches(
  total: number,
  batch: number,
  writers: number,
  write: (from: number, count: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < total) {
        const from = next;
        next += batch;
        await write(from, Math.min(batch, total - from));
      }
    }),
  );
}
