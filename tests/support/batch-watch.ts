import type { PoolClient } from '../../src/infra/postgres/pool.js';
import type { Projector } from '../../src/projections/projector.js';

/**
 * The projector with `look` run inside each batch's transaction, before the batch is applied: what it
 * returns is pushed to `seen`, one entry per batch. For tests that check what a batch runs under.
 */
export function watchingBatches<T>(
  projector: Projector,
  look: (client: PoolClient) => Promise<T>,
): { projector: Projector; seen: T[] } {
  const seen: T[] = [];
  return {
    seen,
    projector: {
      ...projector,
      async apply(events, client) {
        seen.push(await look(client));
        return projector.apply(events, client);
      },
    },
  };
}
