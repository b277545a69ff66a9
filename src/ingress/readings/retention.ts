import { eventTypes } from '../../domain/events/index.js';
import { DAY_MS } from '../../domain/time.js';
import type { EventStore } from '../../eventstore/port.js';

/**
 * Deletes reading events (every type whose retention is 'readings') recorded more than `retentionDays` ago,
 * batch by batch, and lets the store record its retention horizon. Returns `supported: false` on a store
 * that expires such events itself (KurrentDB: `$maxAge` metadata on the readings streams).
 */
export async function deleteExpiredReadings(
  store: EventStore,
  options: { retentionDays: number; now: number; batchSize?: number; signal?: AbortSignal },
): Promise<{ deleted: number; supported: boolean }> {
  if (!store.deleteBefore) return { deleted: 0, supported: false };
  const before = new Date(options.now - options.retentionDays * DAY_MS);
  const types = eventTypes((d) => d.retention === 'readings');
  let deleted = 0;
  while (!options.signal?.aborted) {
    const batch = await store.deleteBefore({
      eventTypes: types,
      before,
      batchSize: options.batchSize ?? 5000,
    });
    deleted += batch.deleted;
    if (batch.deleted === 0) break;
  }
  return { deleted, supported: true };
}
