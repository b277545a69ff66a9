import type { EventStore } from '../eventstore/port.js';
import type { Pool } from '../infra/postgres/pool.js';
import { installProjector, lockCheckpoint, saveCheckpoint } from './checkpoints.js';
import { RebuildRefused, type Projector } from './projector.js';
import { inSchema, replayIntoSchema, replayPages } from './replay.js';

const PARTITIONS_OF = `
  SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
   WHERE i.inhparent = to_regclass($1)`;

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
  if (projector.rebuildRefused) throw new RebuildRefused(projector.name, projector.rebuildRefused);
  await installProjector(pool, projector);
  const shadow = `rebuild_${projector.name.replace(/[^a-z0-9_]/gi, '_')}`.toLowerCase();
  const started = Date.now();
  const eventsTotal = await store.countEvents?.(projector.eventTypes);
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

  const replayed = await replayIntoSchema(pool, store, projector, shadow, {
    batchSize: options.batchSize,
    signal: options.signal,
    onBatch: (n) => {
      applied = n;
      report(false);
    },
  });
  let position = replayed.position;
  applied = replayed.applied;

  await inSchema(pool, shadow, async (client) => {
    // The live projector commits only under this lock: from here on nothing it writes can fall between
    // the replay's last page and the swap.
    await lockCheckpoint(client, projector.name);
    const tail = await replayPages(store, projector, position, options.batchSize, (events, prepared) =>
      projector.apply(events, client, prepared),
    );
    position = tail.position;
    applied += tail.applied;
    for (const table of projector.tables) {
      await client.query(`DROP TABLE IF EXISTS public.${table}`);
      // A partitioned table moves alone: its partitions follow one by one, or the schema's drop takes them.
      const { rows: partitions } = await client.query<{ name: string }>(PARTITIONS_OF, [
        `${shadow}.${table}`,
      ]);
      await client.query(`ALTER TABLE ${shadow}.${table} SET SCHEMA public`);
      for (const { name } of partitions)
        await client.query(`ALTER TABLE ${shadow}.${name} SET SCHEMA public`);
    }
    await client.query(`UPDATE projection.checkpoints SET events_applied = 0 WHERE projector = $1`, [
      projector.name,
    ]);
    await saveCheckpoint(client, projector.name, position, applied, projector.version);
  });
  await pool.query(`DROP SCHEMA IF EXISTS ${shadow} CASCADE`);
  return report(true);
}
