import type { EventStore } from '../eventstore/port.js';
import type { Logger } from '../infra/logger.js';
import { inTransaction, type Pool } from '../infra/postgres/pool.js';
import { advanceCheckpoint, installProjector, readCheckpoint } from './checkpoints.js';
import type { Projector } from './projector.js';
import { projectorLock, runElected } from '../infra/postgres/election.js';
import { rebuildProjector } from './rebuild.js';
import type { PartitionShare } from './partition-share.js';

export interface RunnerOptions {
  readonly batchSize: number;
  /** SubscribeOptions.minReadIntervalMs of the live subscription (PROJECTION_COALESCE_MS). */
  readonly coalesceMs?: number;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** Where the leadership connection comes from: never the query pool (src/runtime/database.ts). */
  readonly locks: Pool;
  /** How long a standby waits before trying to become the active instance again. */
  readonly standbyRetryMs?: number;
  /** Called after each committed batch (metrics). */
  readonly onBatch?: (projector: string, events: number, lastPosition: string | undefined) => void;
  /** Keeps this process to its fair share of a partitioned projector's partitions (partition-share.ts). */
  readonly share?: PartitionShare;
}

/**
 * Runs one projector for as long as the signal allows. Only the instance elected for the projector
 * (src/infra/postgres/election.ts) projects; the others stand by. Losing the leadership connection stops the
 * subscription and sends the instance back to standing by. Correctness does not rest on the lock: each
 * batch commits only if the checkpoint is still where this instance left it.
 */
export async function runProjector(
  pool: Pool,
  store: EventStore,
  projector: Projector,
  options: RunnerOptions,
) {
  const log = options.logger.child({ projector: projector.name });
  await installProjector(pool, projector);
  const { partition } = projector;
  const share = partition ? options.share : undefined;
  // A checkpoint that is gone was repartitioned away (partitioning.ts): this process runs an old count.
  const retired = new AbortController();
  await runElected(
    options.locks,
    projectorLock(projector.name),
    async (leadership) => {
      const checkpoint = await readCheckpoint(pool, projector.name);
      if (!checkpoint) {
        log.error(
          'this projector has no checkpoint: its partitioning changed; restart this process to follow it',
        );
        retired.abort();
        return;
      }
      const seat = partition && share?.seat(partition);
      const signal = seat ? AbortSignal.any([leadership, seat.signal]) : leadership;
      try {
        if (checkpoint.version < projector.version) {
          log.info(
            { from: checkpoint.version, to: projector.version },
            'read model version changed: rebuilding',
          );
          await rebuildProjector(pool, store, projector, { batchSize: options.batchSize, signal });
        }
        await projectWhileLeading(pool, store, projector, { ...options, signal });
      } finally {
        seat?.release();
      }
    },
    {
      signal: AbortSignal.any([options.signal, retired.signal]),
      logger: log,
      standbyRetryMs: options.standbyRetryMs ?? 2000,
      mayLead: partition && share ? () => share.mayLead(partition) : undefined,
    },
  );
}

async function projectWhileLeading(
  pool: Pool,
  store: EventStore,
  projector: Projector,
  options: RunnerOptions,
) {
  for (;;) {
    const expected = (await readCheckpoint(pool, projector.name))?.position;
    const subscription = store.subscribeToAll({
      after: expected,
      eventTypes: projector.eventTypes,
      signal: options.signal,
      batchSize: options.batchSize,
      minReadIntervalMs: options.coalesceMs,
      prepare: projector.prepare?.bind(projector),
      dataAsStored: projector.dataAsStored,
    });
    let position = expected;
    let restart = false;
    for await (const batch of subscription) {
      if (batch.events.length === 0 && batch.checkpoint === position) continue;
      const committed = await commitBatch(pool, projector, position, batch.events, batch.checkpoint, {
        prepared: batch.prepared,
        eventStore: store.kind,
      });
      if (!committed) {
        restart = true; // someone else moved the checkpoint (a rebuild swap): continue from theirs
        break;
      }
      position = batch.checkpoint;
      options.onBatch?.(projector.name, batch.events.length, position);
    }
    if (!restart) return;
  }
}

/**
 * Applies one batch and moves the checkpoint, atomically; false when the checkpoint was not at `expected`.
 * `prepared` is what Projector.prepare made for these events, if anything. `eventStore` is the kind of store the events came from: a batch may skip the wait for the WAL flush
 * (Projector.asynchronousCommit) only when they came from this same PostgreSQL, whose flush orders it after
 * every event it applied and before any deletion of them. KurrentDB expires events by age on its own clock;
 * a batch undone by a crash might then find its events gone. Unknown (undefined): durable.
 */
export async function commitBatch(
  pool: Pool,
  projector: Projector,
  expected: string | undefined,
  events: Parameters<Projector['apply']>[0],
  next: string | undefined,
  { prepared, eventStore }: { prepared?: unknown; eventStore?: EventStore['kind'] } = {},
): Promise<boolean> {
  return inTransaction(
    pool,
    async (client) => {
      if (!(await advanceCheckpoint(client, projector.name, expected, next ?? expected, events.length))) {
        return false;
      }
      if (events.length > 0) await projector.apply(events, client, prepared);
      return true;
    },
    { waitForFlush: !(projector.asynchronousCommit && eventStore === 'postgres') },
  );
}
