/**
 * The event-store port. Everything outside src/eventstore sees only this: positions are opaque strings
 * that sort in global order (compare them with `comparePositions`, never parse them).
 */

/** What an append expects of the stream: that it does not exist, that it does, any state, or an exact revision. */
export type ExpectedRevision = 'no_stream' | 'stream_exists' | 'any' | bigint;

/** An event to append. `id` is a UUID chosen by the writer; appending the same ids again is a no-op. */
export interface NewEvent<T extends string = string, D = unknown> {
  readonly id: string;
  readonly type: T;
  readonly data: D;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

export interface RecordedEvent<T extends string = string, D = unknown> {
  readonly id: string;
  readonly type: T;
  readonly data: D;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly streamName: string;
  /** 0-based revision of the event in its stream. */
  readonly revision: bigint;
  /** Opaque, totally ordered position in the global order. */
  readonly position: string;
  readonly recordedAt: Date;
  /**
   * The data's JSON text exactly as the store keeps it, where the read asked for it (ReadAllOptions.
   * dataAsStored) and the store keeps text: the audit chain's verification hashes these bytes.
   */
  readonly dataText?: string;
}

export interface AppendResult {
  /** Revision of the last event of the stream after the append. */
  readonly nextRevision: bigint;
  /** Position of the last event written (or found, for an idempotent repeat). */
  readonly position: string;
}

export interface StreamAppend {
  readonly streamName: string;
  readonly events: readonly NewEvent[];
  readonly expectedRevision: ExpectedRevision;
}

/** One event of a batch append: appended to its stream at whatever revision the stream has. */
export interface BatchEntry {
  readonly streamName: string;
  readonly event: NewEvent;
}

export interface BatchEntryResult {
  readonly id: string;
  /** False when the id was already stored (or repeated within the batch): nothing was written for it. */
  readonly inserted: boolean;
  readonly position: string;
}

export interface ReadAllOptions {
  /** Exclusive: events strictly after this position. Omit to read from the start. */
  readonly after?: string;
  /**
   * Inclusive, instead of `after`: the event at this position (if still stored) and those after it. The live
   * stream resumes in the middle of an event that yields several frames with it.
   */
  readonly from?: string;
  readonly maxCount: number;
  /** Only these event types (the position still advances past the others). */
  readonly eventTypes?: readonly string[];
  /** With `eventTypes`: also hand back each event's data as the store keeps it (`dataText`), where it keeps text. */
  readonly dataAsStored?: boolean;
  /**
   * With `dataAsStored`: a long read through much of the history (audit verification, export), not a
   * reader at the head. The Postgres store then plans each type on its own (read_types_merged_page), which
   * is steady on any store but costs more for the few events at the head (docs/eventstore.md).
   */
  readonly longRead?: boolean;
}

export interface ReadAllPage {
  readonly events: readonly RecordedEvent[];
  /** Position to resume after; advances past filtered-out events too. Undefined when nothing was read. */
  readonly lastPosition: string | undefined;
  /** True when the page stopped at the current end of the visible global order. */
  readonly atEnd: boolean;
}

export interface SubscribeOptions {
  readonly after?: string;
  readonly eventTypes?: readonly string[];
  readonly signal?: AbortSignal;
  /** Upper bound on events delivered in one batch. */
  readonly batchSize?: number;
  /**
   * Once live, a read woken by an append (during the consumer's work on a batch or after) starts no sooner
   * than this many milliseconds after the previous read that delivered events began, so appends that come
   * close together are delivered as one batch. A first append after a quiet spell is read at once. Adapters
   * without append wake-ups ignore it.
   */
  readonly minReadIntervalMs?: number;
  /**
   * Work on a batch that may start before the batch is handed out: run on each page read ahead as soon as
   * it arrives, while the subscriber still applies the page before it; its result comes with the batch as
   * `prepared`. Adapters that do not read ahead never call it.
   */
  readonly prepare?: (events: readonly RecordedEvent[]) => unknown;
  /** With `eventTypes`: each event's data also as the store keeps it (ReadAllOptions.dataAsStored). */
  readonly dataAsStored?: boolean;
}

export interface Subscription {
  /**
   * Batches of events in global order, catching up then live. The iterator ends when the signal aborts.
   * An empty batch signals the subscriber has caught up (it may carry a checkpoint position).
   */
  [Symbol.asyncIterator](): AsyncIterator<SubscriptionBatch>;
}

export interface SubscriptionBatch {
  readonly events: readonly RecordedEvent[];
  /** Position after this batch (including events the filter skipped); resume from here. */
  readonly checkpoint: string | undefined;
  readonly caughtUp: boolean;
  /** What `prepare` (SubscribeOptions) made of these events, when it ran on them. */
  readonly prepared?: unknown;
}

/** One retention batch: events of these types recorded before `before`, at most `batchSize` per type. */
export interface DeleteBeforeOptions {
  readonly eventTypes: readonly string[];
  readonly before: Date;
  readonly batchSize: number;
}

export interface RetentionPoint {
  /** Position of the newest event of the types that retention deleted. */
  readonly horizon: string;
  readonly recordedBefore: Date;
}

export interface EventStore {
  readonly kind: 'postgres' | 'kurrentdb';
  append(
    streamName: string,
    events: readonly NewEvent[],
    expectedRevision: ExpectedRevision,
  ): Promise<AppendResult>;
  /**
   * Appends to several streams, all or nothing: one transaction on Postgres, one multi-stream append on
   * KurrentDB 25.1+. Only a KurrentDB server older than 25.1 falls back to stream by stream.
   */
  appendMany(appends: readonly StreamAppend[]): Promise<AppendResult[]>;
  /**
   * High-volume ingest: appends each entry to its stream at revision "any", idempotent by event id (ids
   * already stored are skipped and reported). Postgres writes the batch in one transaction; KurrentDB
   * appends entry by entry. Results follow the order of the distinct ids of the input.
   */
  appendBatch(entries: readonly BatchEntry[]): Promise<BatchEntryResult[]>;
  /** The whole stream in revision order; an empty array when the stream does not exist. */
  readStream(
    streamName: string,
    options?: { fromRevision?: bigint; maxCount?: number },
  ): Promise<RecordedEvent[]>;
  readAll(options: ReadAllOptions): Promise<ReadAllPage>;
  subscribeToAll(options: SubscribeOptions): Subscription;
  /** Position of the last event visible to readers of the global order, or undefined when the store is empty. */
  headPosition(): Promise<string | undefined>;
  comparePositions(a: string, b: string): number;
  /** True when `position` has the shape of a position of this store (checked before trusting client input). */
  isValidPosition(position: string): boolean;
  /** How many events of these types the store holds, where it can tell cheaply (progress bars' ETA). */
  countEvents?(eventTypes: readonly string[]): Promise<number>;
  /**
   * How many visible events of these types lie after `after` (all of them when undefined), counting at most
   * `limit`; where it can tell cheaply (projection lag on /metrics).
   */
  countEventsAfter?(after: string | undefined, eventTypes: readonly string[], limit: number): Promise<number>;
  /**
   * Retention of short-lived events (readings), one batch per call: deletes the oldest events of these
   * types recorded before `before` and records the retention horizon; call again until it deletes none.
   * Postgres only. KurrentDB expires them itself through `$maxAge` metadata on their streams instead.
   */
  deleteBefore?(options: DeleteBeforeOptions): Promise<{ deleted: number }>;
  /**
   * Position of the newest event of these types that retention deleted, or undefined when none was. A reader
   * resuming from a position before it has missed events.
   */
  retentionHorizon?(eventTypes: readonly string[]): Promise<string | undefined>;
  /** The horizon with the cut-off of the deletion that set it: events recorded before it may be gone. */
  retention?(eventTypes: readonly string[]): Promise<RetentionPoint | undefined>;
  /** True when the store answers; used by /health. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** The stream was not at the revision the append expected. */
export class WrongExpectedRevisionError extends Error {
  constructor(
    readonly streamName: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${streamName}: expected revision ${String(expected)}, found ${String(actual)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/** An event id was appended before with different content or to another stream. */
export class DuplicateEventIdError extends Error {
  constructor(
    readonly eventId: string,
    readonly streamName: string,
  ) {
    super(`event ${eventId} already exists outside this append to ${streamName}`);
    this.name = 'DuplicateEventIdError';
  }
}

/**
 * A decision lost the race for its stream on every attempt of the optimistic loop. Nothing was recorded;
 * the same request can be sent again a moment later (the API answers 503 with Retry-After).
 */
export class StreamContendedError extends Error {
  constructor(
    readonly streamName: string,
    readonly attempts: number,
  ) {
    super(`stream ${streamName}: still contended after ${attempts} attempts`);
    this.name = 'StreamContendedError';
  }
}

/** The event store could not be reached or failed; the caller may retry later (maps to 503). */
export class EventStoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EventStoreUnavailableError';
  }
}

/** A position string that this store did not produce (e.g. a forged or foreign Last-Event-ID). */
export class InvalidPositionError extends Error {
  constructor(readonly position: string) {
    super(`not a position of this event store: ${JSON.stringify(position.slice(0, 80))}`);
    this.name = 'InvalidPositionError';
  }
}
