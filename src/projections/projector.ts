import type { RecordedEvent } from '../eventstore/port.js';
import type { PoolClient } from '../infra/postgres/pool.js';

/** One partition of a partitioned projector (partitions.ts): its place among the family's `count`. */
export interface Partition {
  readonly family: string;
  readonly index: number;
  readonly count: number;
}

/**
 * A projector turns events of the global order into read-model rows. It owns its tables: `schemaSql`
 * creates them with unqualified names, so a rebuild can create fresh copies in a shadow schema and swap
 * them in. `apply` runs inside the transaction that also moves the checkpoint.
 */
export interface Projector {
  readonly name: string;
  /** Bump when the tables or the way events map onto them change: start-up then rebuilds the read model. */
  readonly version: number;
  readonly eventTypes: readonly string[];
  readonly tables: readonly string[];
  readonly schemaSql: string;
  /**
   * Indexes only the read API's queries use: `apply` never reads through them. Installing creates them with
   * the tables; a replay into a fresh schema creates them once at its end, which costs far less than
   * keeping them up row by row while every event is applied.
   */
  readonly queryIndexSql?: string;
  /**
   * The part of applying a batch that needs no database, run ahead (while the batch before is still being
   * applied) where the events are read ahead. Its result is handed back to `apply` with the same events,
   * which must check it still holds and otherwise do the work itself: correctness never depends on it.
   * Synchronous: it runs on the event loop while the batch before waits on PostgreSQL.
   */
  prepare?(events: readonly RecordedEvent[]): unknown;
  /**
   * Set when `apply` needs each event's data as the store keeps it (RecordedEvent.dataText, where the store
   * keeps text): the audit chain commits to those bytes.
   */
  readonly dataAsStored?: boolean;
  apply(events: readonly RecordedEvent[], db: PoolClient, prepared?: unknown): Promise<void>;
  /**
   * Why a rebuild is refused, where it is: the read model holds history a replay cannot give back. Readings'
   * read models outlive the events retention deletes; the audit chain is evidence of what the events were
   * when it was made, which a replay from today's events would overwrite.
   */
  readonly rebuildRefused?: string;
  /**
   * Set when the projector's live batches may commit without waiting for the WAL flush (the readings read
   * models, whose batches are the largest and most frequent). A crash of PostgreSQL or of its machine may
   * then undo the last fraction of a second of batches, each whole with its checkpoint, and the projector
   * applies them again from the event store: the same rows, as events are never lost (their appends wait
   * for the flush, and flushing WAL flushes all WAL before it). What a reader saw of an undone batch comes
   * back once it is applied again. Only with the PostgreSQL event store (runner.ts, commitBatch). Read
   * models of the control plane keep durable batches: an auditor's view never steps back (docs/projections.md,
   * "Live batches and the WAL flush").
   */
  readonly asynchronousCommit?: boolean;
  /**
   * Brings the read model to the one form that every batching of the same events gives (telemetry: the
   * minutes still pending rolled up into their hours and days), without changing what a reader sees. For
   * checks that compare read models table by table; the runner never calls it.
   */
  settle?(db: PoolClient): Promise<void>;
  /** Set on one partition of a partitioned projector (partitions.ts); absent on a whole projector. */
  readonly partition?: Partition;
}

/** The reason readings' read models give for refusing a rebuild. */
export const KEEPS_HISTORY_BEYOND_RETENTION =
  'it keeps history older than the events the store still holds; a rebuild would lose it ' +
  '(change its tables with a migration instead)';

/** A rebuild was asked of a projector that refuses one (Projector.rebuildRefused says why). */
export class RebuildRefused extends Error {
  constructor(
    readonly projector: string,
    reason: string,
  ) {
    super(`${projector}: ${reason}`);
    this.name = 'RebuildRefused';
  }
}
