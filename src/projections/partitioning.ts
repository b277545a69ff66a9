import type { EventStore } from '../eventstore/port.js';
import { projectorLock, tryLock, unlock } from '../infra/postgres/election.js';
import { inTransaction, type Pool, type PoolClient } from '../infra/postgres/pool.js';
import {
  FAMILY_CHECKPOINTS,
  installProjector,
  readCheckpoint,
  recordedPartitionCount,
} from './checkpoints.js';
import { partitionsOf, type PartitionableProjector } from './partitions.js';
import type { Projector } from './projector.js';
import { catchUpProjector } from './catch-up.js';

/** A partition of the old count is still being projected by a running process. */
export class PartitionsInUse extends Error {
  constructor(readonly projector: string) {
    super(`${projector} is being projected by a running process: stop every projector process first`);
    this.name = 'PartitionsInUse';
  }
}

export interface Repartitioned {
  readonly from: number | undefined;
  readonly to: number;
  /** Where every new partition starts: each old one was brought exactly here first. */
  readonly position: string | undefined;
}

/**
 * Changes how many partitions a family runs in, without losing or repeating an event. While holding every
 * old partition's election lock (so no process projects them meanwhile), it brings each old partition to
 * one common position, then in one transaction replaces the old checkpoints with the new partitions'
 * checkpoints at that position. A process still running with the old count finds its checkpoint gone and
 * stops projecting it (runner.ts); started again, it reads the new count.
 */
export async function repartition(
  pool: Pool,
  locks: Pool,
  store: EventStore,
  family: PartitionableProjector,
  count: number,
  options: { batchSize: number; timeoutMs?: number },
): Promise<Repartitioned> {
  const wanted = partitionsOf(family, count);
  const from = await recordedPartitionCount(pool, family.family);
  if (from === undefined || from === count) {
    for (const projector of wanted) await installProjector(pool, projector);
    return { from, to: count, position: (await readCheckpoint(pool, wanted[0]!.name))?.position };
  }
  const old = partitionsOf(family, from);
  const connection = await locks.connect();
  const held: string[] = [];
  try {
    for (const projector of old) {
      const lock = projectorLock(projector.name);
      if (!(await tryLock(connection, lock))) throw new PartitionsInUse(projector.name);
      held.push(lock);
    }
    let target = await store.headPosition();
    for (const projector of old) {
      const position = (await readCheckpoint(pool, projector.name))?.position;
      if (position !== undefined && (target === undefined || store.comparePositions(position, target) > 0))
        target = position;
    }
    if (target !== undefined)
      for (const projector of old)
        await catchUpProjector(
          pool,
          store,
          projector,
          options.batchSize,
          target,
          options.timeoutMs ?? 60_000,
        );
    await inTransaction(pool, (client) => replaceCheckpoints(client, family.family, old, wanted, target));
    for (const projector of wanted) await installProjector(pool, projector);
    return { from, to: count, position: target };
  } finally {
    for (const lock of held) await unlock(connection, lock).catch(() => undefined);
    connection.release(held.length > 0 ? true : undefined);
  }
}

async function replaceCheckpoints(
  client: PoolClient,
  family: string,
  old: readonly Projector[],
  wanted: readonly Projector[],
  position: string | undefined,
): Promise<void> {
  const { rows } = await client.query<{ projector: string; position: string | null }>(
    `${FAMILY_CHECKPOINTS} FOR UPDATE`,
    [family],
  );
  const oldNames = new Set(old.map((p) => p.name));
  const moved = rows.find((row) => !oldNames.has(row.projector) || (row.position ?? undefined) !== position);
  if (moved)
    throw new Error(`${moved.projector} moved while repartitioning ${family}; run the command again`);
  await client.query('DELETE FROM projection.checkpoints WHERE projector = ANY ($1::text[])', [
    [...oldNames],
  ]);
  await client.query(
    `INSERT INTO projection.checkpoints (projector, position, version)
     SELECT name, $2, $3 FROM unnest($1::text[]) AS name`,
    [wanted.map((p) => p.name), position ?? null, wanted[0]!.version],
  );
}
