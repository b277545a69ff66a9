import express from 'express';
import type { Config } from '../config.js';
import type { EventStore } from '../eventstore/port.js';
import type { Logger } from '../infra/logger.js';
import type { Metrics } from '../infra/metrics.js';
import type { Pool } from '../infra/postgres/pool.js';
import { healthRoutes } from './health.js';
import { errorHandler, unknownRoute } from './http-errors.js';
import { requestContext } from './request-context.js';

export interface ApiDependencies {
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly pool: Pool;
  readonly store: EventStore;
}

/** The HTTP API: health and metrics, the /v1 routes, then JSON 404 and the one error mapper. */
export function createApiApp(deps: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.config.TRUST_PROXY_HOPS);
  app.use(requestContext(deps.logger, deps.metrics));
  app.use(healthRoutes(deps));
  app.use(unknownRoute);
  app.use(errorHandler);
  return app;
}
