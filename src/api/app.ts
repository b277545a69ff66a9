import express from 'express';
import type { Config } from '../config.js';
import type { EventStore } from '../eventstore/port.js';
import type { Logger } from '../infra/logger.js';
import type { Metrics } from '../infra/metrics.js';
import type { Pool } from '../infra/postgres/pool.js';
import { createApiAuth } from './auth/index.js';
import { healthRoutes } from './health.js';
import { jsonBody } from './json-body.js';
import { metricsAccess } from './metrics-access.js';
import { rateLimit, TokenBuckets } from './rate-limit.js';
import { errorHandler, unknownRoute } from './http-errors.js';
import { requestContext } from './request-context.js';
import { openApiRoutes } from './routes/openapi.js';
import { registryRoutes } from './routes/registry.js';
import { deviceDataRoutes } from './routes/device-data.js';

export interface ApiDependencies {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly pool: Pool;
  readonly store: EventStore;
  /** Milliseconds since the epoch for token times, key and revocation caches and rate limits; tests move it. */
  readonly now?: () => number;
}

/** The HTTP API: health and metrics, the /v1 routes, then JSON 404 and the one error mapper. */
export function createApiApp(deps: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.TRUST_PROXY_HOPS);
  app.use(requestContext(deps.logger, deps.metrics));
  // Every route, /health included, before any work is done for the request.
  app.use(
    rateLimit(
      new TokenBuckets({
        ratePerSecond: deps.config.RATE_LIMIT_PER_SECOND,
        burst: deps.config.RATE_LIMIT_BURST,
        now: deps.now,
      }),
    ),
  );
  app.use('/metrics', metricsAccess(deps.config.METRICS_TOKEN));
  app.use(healthRoutes(deps));
  app.use(openApiRoutes());
  const auth = createApiAuth(deps);
  app.use('/v1', auth.tokenRoutes);
  // Everything under /v1 below this line needs a bearer token; routes add requireScope(...) themselves.
  app.use('/v1', auth.authenticate, jsonBody);
  app.use('/v1', registryRoutes(deps));
  app.use('/v1', deviceDataRoutes({ pool: deps.pool, now: deps.now ?? Date.now }));
  app.use(unknownRoute);
  app.use(errorHandler);
  return app;
}
