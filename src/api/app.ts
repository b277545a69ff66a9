import express from 'express';
import type { Config } from '../config.js';
import type { EventStore } from '../eventstore/port.js';
import type { Logger } from '../infra/logger.js';
import type { Metrics } from '../infra/metrics.js';
import type { Pool } from '../infra/postgres/pool.js';
import { TokenBuckets } from '../infra/token-buckets.js';
import type { ClusterLimits } from './cluster-limits/index.js';
import { createApiAuth } from './auth/index.js';
import type { LagFigures } from '../projections/lag.js';
import { healthRoutes } from './health.js';
import { jsonBody } from './json-body.js';
import { metricsAccess } from './metrics-access.js';
import { rateLimit } from './rate-limit.js';
import { errorHandler, refuseOptions, unknownRoute } from './http-errors.js';
import { requestContext } from './request-context.js';
import { storableInput } from './storable-input.js';
import { openApiRoutes } from './routes/openapi.js';
import { registryRoutes } from './routes/registry.js';
import { deviceDataRoutes } from './routes/device-data.js';
import { LiveHub } from './live/hub.js';
import { liveRoutes, refuseTokenInQuery } from './live/route.js';
import { controlRoutes } from './routes/control.js';
import { cursorKeys } from './pagination/cursor-keys.js';

export interface ApiDependencies {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The primary: keys, revocations and health. */
  readonly pool: Pool;
  /**
   * Read-model queries and the waits of writes on projection positions, from one server so that a write
   * answers only once a read will see it: a read-only replica's pool, or `pool` (the default).
   */
  readonly queries?: Pool;
  readonly store: EventStore;
  /** Milliseconds since the epoch for token times, key and revocation caches and rate limits; tests move it. */
  readonly now?: () => number;
  /** The process's live hub; its owner starts and closes it. Absent: one that starts with the first stream. */
  readonly live?: LiveHub;
  /** Projection lag figures for /health and the state endpoint; absent, neither reports lag. */
  readonly lag?: LagFigures;
  /** Request and stream limits shared with the other API processes; absent, this process counts alone. */
  readonly limits?: ClusterLimits;
}

/** The live hub of an API process, configured from `config`. */
export function createLiveHub(
  deps: Pick<ApiDependencies, 'config' | 'logger' | 'store' | 'now' | 'pool'>,
): LiveHub {
  return new LiveHub({
    keyFor: cursorKeys(deps.pool),
    store: deps.store,
    logger: deps.logger,
    windowFrames: deps.config.LIVE_WINDOW_FRAMES,
    readingsRetentionDays: deps.config.READINGS_RETENTION_DAYS,
    now: deps.now ?? Date.now,
  });
}

/** As express mounts '/v1': case-insensitive, the prefix itself included. */
const UNDER_V1 = /^\/v1(\/|$)/i;

/** The HTTP API: health and metrics, the /v1 routes, then JSON 404 and the one error mapper. */
export function createApiApp(deps: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.TRUST_PROXY_HOPS);
  app.use(requestContext(deps.logger, deps.metrics));
  // Every route, /health included, before any work is done for the request.
  app.use(
    rateLimit(
      deps.limits?.requests ??
        new TokenBuckets({
          ratePerSecond: deps.config.RATE_LIMIT_PER_SECOND,
          burst: deps.config.RATE_LIMIT_BURST,
          now: deps.now,
        }),
    ),
  );
  // OPTIONS outside /v1 here; under /v1 only after authentication (401 first, as for every method) and
  // after the token endpoint (which allows POST alone: 405).
  app.use((req, res, next) => (UNDER_V1.test(req.path) ? next() : refuseOptions(req, res, next)));
  app.use('/metrics', metricsAccess(deps.config.METRICS_TOKEN));
  app.use(healthRoutes(deps));
  app.use(openApiRoutes(deps.config.PUBLIC_BASE_URL));
  const auth = createApiAuth(deps);
  app.use(auth.metadataRoutes);
  app.use('/v1', auth.tokenRoutes);
  app.use('/v1/live', refuseTokenInQuery);
  // Everything under /v1 below this line needs a bearer token; routes add requireScope(...) themselves.
  app.use('/v1', auth.authenticate, refuseOptions, jsonBody, storableInput);
  const queries = deps.queries ?? deps.pool;
  const cursorKey = cursorKeys(deps.pool);
  app.use('/v1', registryRoutes({ pool: queries, cursorKey, store: deps.store, now: deps.now }));
  app.use('/v1', deviceDataRoutes({ pool: queries, now: deps.now ?? Date.now, lag: deps.lag }));
  app.use(
    '/v1',
    liveRoutes({
      hub: deps.live ?? createLiveHub(deps),
      logger: deps.logger,
      maxStreamsPerClient: deps.config.LIVE_MAX_STREAMS_PER_CLIENT,
      slots: deps.limits?.streams,
      maxBufferedBytes: deps.config.LIVE_CLIENT_BUFFER_BYTES,
      stallMs: deps.config.LIVE_CLIENT_STALL_MS,
      revocations: auth.revocations,
      now: deps.now ?? Date.now,
      metrics: deps.metrics.live,
    }),
  );
  app.use(
    '/v1',
    controlRoutes({
      pool: queries,
      cursorKey,
      store: deps.store,
      now: deps.now ?? Date.now,
      metrics: deps.metrics.commands,
    }),
  );
  app.use(unknownRoute);
  app.use(errorHandler);
  return app;
}
