import { Router } from 'express';
import type { Pool } from '../../infra/postgres/pool.js';
import type { LagFigures } from '../../projections/lag.js';
import { deviceStateRoutes } from './device-state.js';
import { telemetryRoutes } from './telemetry.js';

/** What devices report: their state and their telemetry history (mounted under /v1). */
export function deviceDataRoutes(deps: { pool: Pool; now: () => number; lag?: LagFigures }): Router {
  const router = Router();
  router.use(deviceStateRoutes(deps));
  router.use(telemetryRoutes(deps));
  return router;
}
