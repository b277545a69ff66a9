import express, { type RequestHandler } from 'express';
import type { Config } from '../config.js';
import type { Metrics } from '../infra/metrics.js';
import { errorHandler, unknownRoute } from './http-errors.js';
import { metricsAccess } from './metrics-access.js';

/** GET /metrics: the process's registry in Prometheus's text format. */
export function serveMetrics(metrics: Metrics): RequestHandler {
  return async (_req, res) => {
    res.set('Content-Type', metrics.registry.contentType).send(await metrics.registry.metrics());
  };
}

/**
 * The HTTP listener of a process without the api role (ingress, projector, scheduler): its broker, command
 * delivery and projectors have figures of their own, which only it can serve. GET /metrics, behind
 * METRICS_TOKEN as on the API, and nothing else.
 */
export function createMetricsOnlyApp(deps: {
  readonly config: Pick<Config, 'METRICS_TOKEN'>;
  readonly metrics: Metrics;
}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use('/metrics', metricsAccess(deps.config.METRICS_TOKEN));
  app.get('/metrics', serveMetrics(deps.metrics));
  app.use(unknownRoute);
  app.use(errorHandler);
  return app;
}
