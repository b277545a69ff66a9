import { setMaxListeners } from 'node:events';
import type { Server } from 'node:http';
import { createApiApp, createLiveHub } from '../../src/api/app.js';
import { startLagMonitor } from '../../src/projections/lag-monitor.js';
import type { LiveHub } from '../../src/api/live/hub.js';
import { createHttpServer, listen } from '../../src/api/server.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import type { Projector } from '../../src/projections/projector.js';
import { runProjector } from '../../src/projections/runner.js';
import { allProjectors } from '../../src/runtime/projectors.js';
import { committedHead, type TestDatabase } from './database.js';
import { closeEventStore, openEventStore } from './event-store.js';
import { checkedAgainstDocument } from './openapi-conformance.js';
import { serviceLogger } from './service-log.js';
import { openClusterLimits } from '../../src/api/cluster-limits/index.js';

/**
 * The real API on an ephemeral port over a fresh database, with the real projectors running in the
 * background (as in production). `catchUp()` brings every read model to the head for deterministic tests.
 */
export interface TestApi {
  readonly baseUrl: string;
  readonly db: TestDatabase;
  readonly store: PostgresEventStore;
  readonly config: Config;
  /** The API's live hub (GET /v1/live). */
  readonly live: LiveHub;
  /** Every read model reaches `position` (default: the store's head now); never returns earlier. */
  catchUp(position?: string): Promise<void>;
  close(): Promise<void>;
}

/** What TestApi.catchUp does over a database and its store: each projector reaches `position` (default: the head now). */
export async function catchUpAll(
  db: TestDatabase,
  store: EventStore,
  projectors: readonly Projector[],
  position?: string,
): Promise<void> {
  const target = position ?? (await committedHead(db.pool));
  for (const p of projectors) await catchUpProjector(db.pool, store, p, 2000, target);
}

export async function startTestApi(
  env: Record<string, string> = {},
  options: { now?: () => number; streamLeaseMs?: number } = {},
): Promise<TestApi> {
  const { db, store } = await openEventStore({ idlePollMs: 50 });
  const config = loadConfig({
    DATABASE_URL: db.url,
    LOG_LEVEL: 'silent',
    HTTP_PORT: '0',
    HTTP_HOST: '127.0.0.1',
    // Suites send bursts of requests from one address; the rate-limit tests set the real limits back.
    RATE_LIMIT_PER_SECOND: '100000',
    RATE_LIMIT_BURST: '100000',
    ...env,
  });
  const logger = serviceLogger();
  const metrics = createMetrics();
  const background = new AbortController();
  const projectors = allProjectors();
  // Every projector waits on this one signal: more than the default ten listeners, and not a leak.
  setMaxListeners(projectors.length, background.signal);
  const running = projectors.map((p) =>
    runProjector(db.pool, store, p, {
      batchSize: 500,
      locks: db.locks,
      signal: background.signal,
      logger,
      standbyRetryMs: 200,
    }),
  );
  const live = createLiveHub({ config, logger, store, pool: db.pool, now: options.now });
  await live.start();
  // As the api role runs it (src/runtime/service.ts): lag on /health, /metrics and the state answers.
  const lag = await startLagMonitor(db.pool, { store, projectors, config, logger, metrics });
  const limits = await openClusterLimits(config, logger, { streamLeaseMs: options.streamLeaseMs });
  const app = createApiApp({
    config,
    logger,
    metrics,
    pool: db.pool,
    store,
    now: options.now,
    live,
    lag,
    limits,
  });
  // Every answer is held to the OpenAPI document as it goes out, whichever client asked.
  const server: Server = await listen(
    createHttpServer(checkedAgainstDocument(app, config.PUBLIC_BASE_URL), config),
    0,
    '127.0.0.1',
  );
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    db,
    store,
    config,
    live,
    catchUp: (position) => catchUpAll(db, store, projectors, position),
    async close() {
      await lag.stop();
      await live.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await limits?.close();
      background.abort();
      await Promise.allSettled(running);
      await closeEventStore({ db, store });
    },
  };
}
