import { Router } from 'express';
import type { Config } from '../config.js';
import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import type { Metrics } from '../infra/metrics.js';
import type { LagFigures } from '../projections/lag.js';
import { serveMetrics } from './metrics-only.js';
import { ok, RATE_LIMITED, type OperationDeclaration } from './openapi/operation.js';

/**
 * GET /health (no auth): 200 when the read-model database (and its replica, where one answers the
 * queries) and the event store answer, else 503.
 * The body names each dependency so an operator sees which one is down, and each projector's lag: status
 * `degraded` (still 200) when one is further behind than PROJECTION_LAG_DEGRADED_SECONDS. No secrets.
 */
export function healthRoutes(deps: {
  pool: Pool;
  /** A read-only replica's pool answering the read-model queries, when one is configured. */
  queries?: Pool;
  store: EventStore;
  metrics: Metrics;
  lag?: LagFigures;
  config: Pick<Config, 'PROJECTION_LAG_DEGRADED_SECONDS'>;
}): Router {
  const router = Router();
  router.get('/health', async (_req, res) => {
    const replica = deps.queries !== undefined && deps.queries !== deps.pool ? deps.queries : undefined;
    const [database, eventStore, replicaUp] = await Promise.all([
      answers(deps.pool),
      deps.store.ping(),
      replica && answers(replica),
    ]);
    // A node whose replica is down cannot answer its queries: it is taken out like one without a database.
    const ok = database && eventStore && replicaUp !== false;
    const threshold = deps.config.PROJECTION_LAG_DEGRADED_SECONDS;
    const projections = Object.fromEntries(
      (deps.lag?.all() ?? []).map((lag) => [
        lag.projector,
        {
          status: lag.seconds > threshold ? 'behind' : 'ok',
          lagSeconds: Number(lag.seconds.toFixed(3)),
          lagEvents: lag.events,
          measuredAt: lag.measuredAt.toISOString(),
        },
      ]),
    );
    const behind = Object.values(projections).some((p) => p.status === 'behind');
    // Degraded still answers 200: the service serves, only its read models are late (docs/api.md).
    res
      .status(ok ? 200 : 503)
      .set('Cache-Control', 'no-store')
      .json({
        status: !ok ? 'unavailable' : behind ? 'degraded' : 'ok',
        checks: {
          database: database ? 'ok' : 'unreachable',
          ...(replica ? { replica: replicaUp ? 'ok' : 'unreachable' } : {}),
          eventStore: { kind: deps.store.kind, status: eventStore ? 'ok' : 'unreachable' },
          ...(deps.lag ? { projections } : {}),
        },
      });
  });
  router.get('/metrics', serveMetrics(deps.metrics));
  return router;
}

function answers(pool: Pool): Promise<boolean> {
  return pool.query('SELECT 1').then(
    () => true,
    () => false,
  );
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const healthOperations: readonly OperationDeclaration[] = [
  [
    'get',
    '/health',
    {
      operationId: 'getHealth',
      summary: 'Liveness of the service and its dependencies',
      security: [],
      responses: {
        200: ok('Health', 'The service and its dependencies answer.'),
        503: ok('Health', 'A dependency is down; the body names it.'),
        429: RATE_LIMITED,
      },
    },
  ],
];
