import { Router } from 'express';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import type { Metrics } from '../infra/metrics.js';

/**
 * GET /health (no auth): 200 when the read-model database and the event store both answer, else 503.
 * The body names each dependency so an operator sees which one is down; it carries no secrets.
 */
export function healthRoutes(deps: { pool: Pool; store: EventStore; metrics: Metrics }): Router {
  const router = Router();
  router.get('/health', async (_req, res) => {
    const [database, eventStore] = await Promise.all([
      deps.pool.query('SELECT 1').then(
        () => true,
        () => false,
      ),
      deps.store.ping(),
    ]);
    const ok = database && eventStore;
    res
      .status(ok ? 200 : 503)
      .set('Cache-Control', 'no-store')
      .json({
        status: ok ? 'ok' : 'unavailable',
        checks: {
          database: database ? 'ok' : 'unreachable',
          eventStore: { kind: deps.store.kind, status: eventStore ? 'ok' : 'unreachable' },
        },
      });
  });
  router.get('/metrics', async (_req, res) => {
    res.set('Content-Type', deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
  return router;
}
