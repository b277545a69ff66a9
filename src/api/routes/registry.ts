import { Router } from 'express';
import type { EventStore } from '../../eventstore/port.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { bindingRoutes } from './bindings.js';
import { catalogueRoutes } from './catalogue.js';
import { deviceRoutes } from './devices.js';
import { pairingRoutes } from './pairing.js';
import { siteRoutes } from './sites.js';

/**
 * The registry's read API and bindings, to mount under /v1 behind authentication. `pool` answers read-model
 * queries (a replica's, where one is configured); `cursorKey` seals page cursors; `now` is the routes'
 * clock (milliseconds since the epoch), which tests move.
 */
export function registryRoutes(deps: {
  pool: Pool;
  cursorKey: (name: string) => Promise<Buffer>;
  store: EventStore;
  now?: () => number;
}): Router {
  const routeDeps = { pool: deps.pool, store: deps.store, now: deps.now ?? Date.now };
  const router = Router();
  router.use(deviceRoutes({ pool: deps.pool, cursorKey: deps.cursorKey }));
  router.use(siteRoutes(routeDeps));
  router.use(catalogueRoutes());
  router.use(bindingRoutes(routeDeps));
  router.use(pairingRoutes(routeDeps));
  return router;
}
