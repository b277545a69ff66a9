import { inTransaction, type Pool, type PoolClient } from '../infra/postgres/pool.js';
import { bind, prepared } from '../infra/postgres/prepared.js';
import { partitionOfName } from './partitions.js';
import type { Projector } from './projector.js';

export interface Checkpoint {
  readonly position: string | undefined;
  readonly version: number;
  readonly eventsApplied: bigint;
  readonly updatedAt: Date;
}

/**
 * Creates the projector's live tables and its checkpoint row if they are missing. A partition's row is
 * created only while its family has no checkpoint under another partitioning: a process started with a
 * different partition count must not begin a second set from the start of the store (partitioning.ts
 * changes the count).
 */
export async function installProjector(pool: Pool, projector: Projector): Promise<void> {
  const family = projector.partition?.family ?? projector.name;
  const count = projector.partition?.count ?? 1;
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`projector-install:${family}`]);
    await client.query('SET LOCAL search_path = public');
    await client.query(projector.schemaSql);
    if (projector.queryIndexSql) await client.query(projector.queryIndexSql);
    const recorded = await recordedPartitionCount(client, family);
    if (recorded !== undefined && recorded !== count) return;
    // NOT EXISTS, not ON CONFLICT alone: the conflict check waits for a batch in flight, which has already
    // moved the row (advanceCheckpoint) and may need a table lock the schema statements above now hold.
    await client.query(
      `INSERT INTO projection.checkpoints (projector, position, version)
       SELECT $1, NULL, $2 WHERE NOT EXISTS (SELECT 1 FROM projection.checkpoints WHERE projector = $1)
       ON CONFLICT (projector) DO NOTHING`,
      [projector.name, projector.version],
    );
  });
}

/** The names of the checkpoints of a family: the whole projector's, or its partitions'. */
export const FAMILY_CHECKPOINTS = `
  SELECT projector, position FROM projection.checkpoints
   WHERE projector = $1 OR (left(projector, length($1) + 1) = $1 || ':')
   ORDER BY projector`;

/** How many partitions a family's checkpoints were recorded for; undefined when it has none yet. */
export async function recordedPartitionCount(
  db: Pool | PoolClient,
  family: string,
): Promise<number | undefined> {
  const { rows } = await db.query<{ projector: string }>(FAMILY_CHECKPOINTS, [family]);
  if (rows.length === 0) return undefined;
  return partitionOfName(rows[0]!.projector).count;
}

export async function readCheckpoint(db: Pool | PoolClient, name: string): Promise<Checkpoint | undefined> {
  const { rows } = await db.query<{
    position: string | null;
    version: number;
    events_applied: string;
    updated_at: Date;
  }>(
    'SELECT position, version, events_applied, updated_at FROM projection.checkpoints WHERE projector = $1',
    [name],
  );
  const row = rows[0];
  return row
    ? {
        position: row.position ?? undefined,
        version: row.version,
        eventsApplied: BigInt(row.events_applied),
        updatedAt: row.updated_at,
      }
    : undefined;
}

/**
 * Locks the checkpoint row for the rest of the transaction and returns its position. Every writer of a
 * projector's tables takes this lock first, so a second instance or a rebuild swap cannot interleave.
 */
export async function lockCheckpoint(db: PoolClient, name: string): Promise<string | undefined> {
  const { rows } = await db.query<{ position: string | null }>(
    'SELECT position FROM projection.checkpoints WHERE projector = $1 FOR UPDATE',
    [name],
  );
  if (rows.length === 0) throw new Error(`projector ${name} is not installed`);
  return rows[0]!.position ?? undefined;
}

const ADVANCE_CHECKPOINT = prepared(
  'projection.advance-checkpoint',
  `UPDATE projection.checkpoints
      SET position = $3, events_applied = events_applied + $4, updated_at = now()
    WHERE projector = $1 AND position IS NOT DISTINCT FROM $2`,
);

/**
 * Moves the checkpoint from `expected` to `next`, counting `applied` events, and keeps its row locked for the
 * rest of the transaction, as lockCheckpoint does; false, with nothing changed, when the checkpoint is no
 * longer at `expected` (another instance or a rebuild swap moved it). One statement where a lock and a save
 * took two: it runs once per batch of every projector.
 */
export async function advanceCheckpoint(
  db: PoolClient,
  name: string,
  expected: string | undefined,
  next: string | undefined,
  applied: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    bind(ADVANCE_CHECKPOINT, [name, expected ?? null, next ?? null, applied]),
  );
  if (rowCount === 1) return true;
  await lockCheckpoint(db, name); // a checkpoint that is not there at all is an error, not a lost race
  return false;
}

export async function saveCheckpoint(
  db: PoolClient,
  name: string,
  position: string | undefined,
  applied: number,
  version?: number,
): Promise<void> {
  await db.query(
    `UPDATE projection.checkpoints
        SET position = $2, events_applied = events_applied + $3, version = coalesce($4, version), updated_at = now()
      WHERE projector = $1`,
    [name, position ?? null, applied, version ?? null],
  );
}
