import { Router } from 'express';
import type { EventStore } from '../../eventstore/port.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { cursorKeys } from '../pagination/cursor-keys.js';
import { commandRoutes } from './commands.js';
import { grantRoutes } from './grants.js';

/** The control plane's API (write grants and commands), to mount under /v1 behind authentication. */
export function controlRoutes(deps: { pool: Pool; store: EventStore; now: () => number }): Router {
  const router = Router();
  router.use(grantRoutes(deps));
  router.use(commandRoutes({ ...deps, cursorKey: cursorKeys(deps.pool) }));
  return router;
}
