import type { EventStore } from '../eventstore/port.js';
import { inTransaction, type Pool, type PoolClient } from '../infra/postgres/pool.js';
import { installProjector, lockCheckpoint, saveCheckpoint } from './checkpoints.js';
import { RebuildRefused, type Projector } from './projector.js';

export interface RebuildProgress {
  readonly projector: string;
  readonly eventsApplied: number;
  /** Events of the projector's types up to the head when the rebuild began (undefined where unknown). */
  readonly eventsTotal: number | undefined;
  readonly elapsedMs: number;
  readonly done: boolean;
}

/**
 * Replays the whole global order into fresh copies of the projector's tables in a shadow schema while the
 * live tables keep answering (and the live projector keeps feeding them), then swaps the copies in within
 * one transaction that first takes the checkpoint lock and catches up the last events.
 */
export async function rebuildProjector(
  pool: Pool,
  store: EventStore,
  projector: Projector,
  options: { batchSize: number; signal?: AbortSignal; onProgress?: (p: RebuildProgress) => void },
): Promise<RebuildProgress> {
  if (projector.keepsHistoryBeyondRetention) throw new RebuildRefused(projector.name);
  await installProjector(pool, projector);
  const shadow = `rebuild_${projector.name.replace(/[^a-z0-9_]/gi, '_')}`.toLowerCase();
  const started = Date.now();
  const eventsTotal = await store.countEvents?.(projector.eventTypes);
  await pool.query(`DROP SCHEMA IF EXISTS ${shadow} CASCADE`);
  await pool.query(`CREATE SCHEMA ${shadow}`);
  await withShadow(pool, shadow, (client) => client.query(projector.schemaSql));

  let position: string | undefined;
  let applied = 0;
  const report = (done: boolean): RebuildProgress => {
    const progress = {
      projector: projector.name,
      eventsApplied: applied,
      eventsTotal,
      elapsedMs: Date.now() - started,
      done,
    };
    options.onProgress?.(progress);
    return progress;
  };

  for (;;) {
    if (options.signal?.aborted) throw new Error('rebuild aborted');
    const page = await store.readAll({
      after: position,
      maxCount: options.batchSize,
      eventTypes: projector.eventTypes,
    });
    if (page.events.length > 0)
      await withShadow(pool, shadow, (client) => projector.apply(page.events, client));
    applied += page.events.length;
    if (page.lastPosition !== undefined) position = page.lastPosition;
    report(false);
    if (page.atEnd) break;
  }

  await withShadow(pool, shadow, async (client) => {
    await lockCheckpoint(client, projector.name);
    for (;;) {
      const page = await store.readAll({
        after: position,
        maxCount: options.batchSize,
        eventTypes: projector.eventTypes,
      });
      if (page.events.length > 0) await projector.apply(page.events, client);
      applied += page.events.length;
      if (page.lastPosition !== undefined) position = page.lastPosition;
      if (page.atEnd) break;
    }
    for (const table of projector.tables) {
      await client.query(`DROP TABLE IF EXISTS public.${table}`);
      await client.query(`ALTER TABLE ${shadow}.${table} SET SCHEMA public`);
    }
    await client.query(`UPDATE projection.checkpoints SET events_applied = 0 WHERE projector = $1`, [
      projector.name,
    ]);
    await saveCheckpoint(client, projector.name, position, applied, projector.version);
  });
  await pool.query(`DROP SCHEMA IF EXISTS ${shadow} CASCADE`);
  return report(true);
}

async function withShadow<T>(
  pool: Pool,
  shadow: string,
  work: (client: PoolClient) => Promise<T>,
  /** Shadow batches need no fsync each: a rebuild cut short by a crash starts again from scratch. */
  relaxedDurability = false,
): Promise<T> {
  return inTransaction(pool, async (client) => {
    await client.query(`SET LOCAL search_path = ${shadow}, public`);
    if (relaxedDurability) await client.query('SET LOCAL synchronous_commit = off');
    return work(client);
  });
}
