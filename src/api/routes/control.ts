import { Router } from 'express';
import type { EventStore } from '../../eventstore/port.js';
import type { CommandMetrics } from '../../infra/metrics.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { commandRoutes } from './commands.js';
import { grantRoutes } from './grants.js';

/**
 * The control plane's API (write grants and commands), to mount under /v1 behind authentication. Decisions
 * read the event store; `pool` answers read-model queries (a replica's, where one is configured).
 */
export function controlRoutes(deps: {
  pool: Pool;
  cursorKey: (name: string) => Promise<Buffer>;
  store: EventStore;
  now: () => number;
  metrics: CommandMetrics;
}): Router {
  const router = Router();
  router.use(grantRoutes(deps));
  router.use(commandRoutes(deps));
  return router;
}
