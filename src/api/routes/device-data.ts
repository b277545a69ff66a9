import { Router } from 'express';
import type { Pool } from '../../infra/postgres/pool.js';
import { deviceStateRoutes } from './device-state.js';
import { telemetryRoutes } from './telemetry.js';

/** What devices report: their state and their telemetry history (mounted under /v1). */
export function deviceDataRoutes(deps: { pool: Pool; now: () => number }): Router {
  const router = Router();
  router.use(deviceStateRoutes(deps));
  router.use(telemetryRoutes(deps));
  return router;
}
