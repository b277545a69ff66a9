import pg from 'pg';
import {
  DuplicateEventIdError,
  EventStoreUnavailableError,
  WrongExpectedRevisionError,
  type AppendResult,
  type BatchEntry,
  type BatchEntryResult,
  type DeleteBeforeOptions,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadAllPage,
  type RecordedEvent,
  type RetentionPoint,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
} from '../port.js';
import type { Logger } from '../../infra/logger.js';
import { jsonArray, textArray, uuidArray } from '../../infra/postgres/binary-array.js';
import { bind, type PreparedStatement } from '../../infra/postgres/prepared.js';
import { parseAppendNotice, type AppendNotice } from './append-notice.js';
import { EventAsStored, type EventRowAsStored } from './event-as-stored.js';
import { comparePgPositions, decodePgPosition, encodePgPosition, isPgPosition } from './position.js';
import {
  APPEND_BATCH,
  APPEND_STREAMS,
  STREAM_REVISIONS,
  APPEND_EVENTS,
  APPEND_NOTIFICATION_CHANNEL,
  COUNT_EVENTS,
  COUNT_EVENTS_AFTER,
  DELETE_EVENTS_BEFORE,
  HEAD_POSITION,
  READ_ALL,
  READ_ALL_OF_TYPES,
  READ_ALL_OF_TYPES_AS_STORED,
  READ_LONG_OF_TYPES_AS_STORED,
  READ_STREAM,
  RETENTION_HORIZON,
} from './sql.js';
import { subscribeByPolling, type AppendWakeup } from './subscription.js';
import { sharedPages, type SharedPages, type SharedReads } from '../shared-pages.js';

const EXPECTED_CODES = { no_stream: -1n, any: -2n, stream_exists: -3n } as const;

interface EventRow {
  event_id: string;
  event_type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  stream_name: string;
  stream_revision: string;
  transaction_id: string;
  global_position: string;
  recorded_ms: number;
}

/** Waits before opening LISTEN again after its connection was lost: the first, and the longest. */
const LISTEN_RETRY_FIRST_MS = 100;
const LISTEN_RETRY_MAX_MS = 5000;
/** The LISTEN connection: how long opening it (or a heartbeat) may take, and how often it is checked. */
const LISTENER_CONNECT_TIMEOUT_MS = 10_000;
const LISTENER_HEARTBEAT_MS = 30_000;
/** How long an idle subscription waits for a notification before it reads anyway (PROJECTION_IDLE_POLL_MS). */
const DEFAULT_IDLE_POLL_MS = 2000;
/** What subscribers are told after a deaf spell: an append of any type, at an unknown position. */
const ANY_APPEND: AppendNotice = { committedFrom: undefined, eventTypes: undefined };

/** Event store on PostgreSQL (see migrations 0001-0003). The pool is owned by the caller. */
export class PostgresEventStore implements EventStore {
  readonly kind = 'postgres' as const;
  private readonly wakeups = new Set<(notice: AppendNotice) => void>();
  private listener: pg.Client | undefined;
  private listening: Promise<void> | undefined;
  /** A LISTEN connection to open again after the last one was lost (or could not be opened). */
  private relisten: NodeJS.Timeout | undefined;
  /** When LISTEN was lost or could not be opened (appends since were announced to no subscriber). */
  private deafSince: number | undefined;
  /** Tries to open LISTEN that failed since it was last open: only the first of a spell is a warning. */
  private failedTries = 0;
  private closed = false;
  private readonly shared: SharedPages | undefined;

  /**
   * `connectionString` opens the one extra connection that LISTENs for appends; `logger` hears when it is
   * lost and when it is back, as subscriptions meanwhile see appends only at their idle poll. Subscriptions
   * whose types all lie within `sharedReads` read through one chain of pages (shared-pages.ts).
   */
  constructor(
    private readonly pool: pg.Pool,
    private readonly options: {
      connectionString: string;
      idlePollMs?: number;
      logger?: Logger;
      sharedReads?: SharedReads;
    },
  ) {
    this.shared = options.sharedReads && sharedPages(this, options.sharedReads);
  }

  async append(
    streamName: string,
    events: readonly NewEvent[],
    expectedRevision: ExpectedRevision,
  ): Promise<AppendResult> {
    const [result] = await this.appendMany([{ streamName, events, expectedRevision }]);
    return result!;
  }

  async appendMany(appends: readonly StreamAppend[]): Promise<AppendResult[]> {
    const nonEmpty = appends.filter((a) => a.events.length > 0);
    if (nonEmpty.length === 0) throw new RangeError('append of no events');
    // A unique violation on event_id means a concurrent twin of this append committed first; running it
    // again finds the stored events and answers as a repeat.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.appendOnce(nonEmpty);
      } catch (error) {
        if (attempt < 2 && isUniqueViolation(error, 'events_event_id_key')) continue;
        throw translate(error, undefined);
      }
    }
  }

  private async appendOnce(appends: readonly StreamAppend[]): Promise<AppendResult[]> {
    if (appends.length === 1) return [toAppendResult((await this.appendOne(appends[0]!)).rows[0]!)];
    const events = appends.flatMap((a) => a.events);
    try {
      const { rows } = await this.pool.query<AppendRow>(APPEND_STREAMS, [
        appends.map((a) => a.streamName),
        appends.map((a) => expectedCode(a.expectedRevision)),
        appends.map((a) => a.events.length),
        ...eventColumns(events),
      ]);
      return rows.map(toAppendResult);
    } catch (error) {
      if (isUniqueViolation(error, 'events_event_id_key')) throw error;
      throw translate(error, await this.failedAppend(error, appends));
    }
  }

  /**
   * Which of several appends an append_streams error is about: for a wrong expected revision, the first
   * whose stream no longer matches its expectation (revisions only grow, so what failed still differs);
   * for a duplicate event id, the one carrying that id.
   */
  private async failedAppend(
    error: unknown,
    appends: readonly StreamAppend[],
  ): Promise<StreamAppend | undefined> {
    const { code, detail } = error as { code?: string; detail?: string };
    if (code === 'DC002') return appends.find((a) => a.events.some((e) => e.id === detail));
    if (code !== 'DC001') return undefined;
    const { rows } = await this.query<{ stream_name: string; revision: string }>(STREAM_REVISIONS, [
      appends.map((a) => a.streamName),
    ]);
    const revisions = new Map(rows.map((r) => [r.stream_name, BigInt(r.revision)]));
    return appends.find((a) => !meetsExpectation(a.expectedRevision, revisions.get(a.streamName)));
  }

  private async appendOne(append: StreamAppend): Promise<pg.QueryResult<AppendRow>> {
    try {
      return await this.pool.query<AppendRow>(APPEND_EVENTS, [
        append.streamName,
        expectedCode(append.expectedRevision),
        ...eventColumns(append.events),
      ]);
    } catch (error) {
      throw isUniqueViolation(error, 'events_event_id_key') ? error : translate(error, append);
    }
  }

  async appendBatch(entries: readonly BatchEntry[]): Promise<BatchEntryResult[]> {
    if (entries.length === 0) return [];
    const parameters = [
      textArray(entries.map((e) => e.streamName)),
      uuidArray(entries.map((e) => e.event.id)),
      textArray(entries.map((e) => e.event.type)),
      jsonArray(entries.map((e) => JSON.stringify(e.event.data))),
      jsonArray(entries.map((e) => (e.event.metadata ? JSON.stringify(e.event.metadata) : null))),
    ];
    // A concurrent batch may store one of our ids between our check and our insert; the retry then
    // finds it stored and reports it as a repeat.
    for (let attempt = 0; ; attempt++) {
      try {
        const { rows } = await this.pool.query<{
          event_id: string;
          inserted: boolean;
          transaction_id: string;
          global_position: string;
        }>(bind(APPEND_BATCH, parameters));
        const byId = new Map(rows.map((r) => [r.event_id, r]));
        const seen = new Set<string>();
        const results: BatchEntryResult[] = [];
        for (const { event } of entries) {
          if (seen.has(event.id)) continue;
          seen.add(event.id);
          const row = byId.get(event.id)!;
          results.push({
            id: event.id,
            inserted: row.inserted,
            position: encodePgPosition(row.transaction_id, row.global_position),
          });
        }
        return results;
      } catch (error) {
        if (attempt < 3 && isUniqueViolation(error, 'events_event_id_key')) continue;
        throw translate(error, undefined);
      }
    }
  }

  async readStream(
    streamName: string,
    options: { fromRevision?: bigint; maxCount?: number } = {},
  ): Promise<RecordedEvent[]> {
    const { rows } = await this.query<EventRow>(READ_STREAM, [
      streamName,
      String(options.fromRevision ?? 0n),
      options.maxCount ?? null,
    ]);
    return rows.map(toRecordedEvent);
  }

  async readAll(options: ReadAllOptions): Promise<ReadAllPage> {
    const after = readStart(options);
    const parameters: unknown[] = [
      String(after.transactionId),
      String(after.globalPosition),
      options.maxCount,
    ];
    const { rows } = options.eventTypes
      ? await this.query<EventRow & { is_head: boolean }>(
          !options.dataAsStored
            ? READ_ALL_OF_TYPES
            : options.longRead
              ? READ_LONG_OF_TYPES_AS_STORED
              : READ_ALL_OF_TYPES_AS_STORED,
          [...parameters, [...new Set(options.eventTypes)]],
        )
      : await this.query<EventRow & { is_head: boolean }>(READ_ALL, parameters);
    const head = rows.at(-1)?.is_head ? rows.pop() : undefined;
    const events =
      options.dataAsStored && options.eventTypes
        ? rows.map((row) => new EventAsStored(row as unknown as EventRowAsStored))
        : rows.map(toRecordedEvent);
    const atEnd = events.length < options.maxCount;
    let lastPosition = events.at(-1)?.position;
    if (atEnd && head) {
      const headPosition = encodePgPosition(head.transaction_id, head.global_position);
      const bound = options.after ?? options.from;
      if (bound === undefined || headPosition > bound) lastPosition = headPosition;
    }
    return { events, lastPosition, atEnd };
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    const onAppend = (wake: (notice: AppendNotice) => void) => this.onAppend(wake);
    const shared = this.shared;
    // The shared pages hold parsed data only.
    if (!shared?.covers(options.eventTypes) || options.dataAsStored) {
      return subscribeByPolling(this, options, onAppend, this.idlePollMs());
    }
    const subscription = subscribeByPolling(shared, options, onAppend, this.idlePollMs());
    return {
      // Counted among the readers the shared pages wait for while it runs (shared-pages.ts).
      async *[Symbol.asyncIterator]() {
        const leave = shared.join();
        try {
          yield* subscription;
        } finally {
          leave();
        }
      },
    };
  }

  async headPosition(): Promise<string | undefined> {
    const { rows } = await this.query<{ transaction_id: string; global_position: string }>(HEAD_POSITION, []);
    const row = rows[0];
    return row ? encodePgPosition(row.transaction_id, row.global_position) : undefined;
  }

  async countEvents(eventTypes: readonly string[]): Promise<number> {
    const { rows } = await this.query<{ n: string }>(COUNT_EVENTS, [[...eventTypes]]);
    return Number(rows[0]!.n);
  }

  async countEventsAfter(
    after: string | undefined,
    eventTypes: readonly string[],
    limit: number,
  ): Promise<number> {
    const from = readStart({ after, maxCount: limit });
    const { rows } = await this.query<{ n: string }>(COUNT_EVENTS_AFTER, [
      String(from.transactionId),
      String(from.globalPosition),
      [...eventTypes],
      limit,
    ]);
    return Number(rows[0]!.n);
  }

  async deleteBefore(options: DeleteBeforeOptions): Promise<{ deleted: number }> {
    if (options.eventTypes.length === 0) return { deleted: 0 };
    const { rows } = await this.query<{ deleted: string }>(DELETE_EVENTS_BEFORE, [
      [...new Set(options.eventTypes)],
      options.before.toISOString(),
      options.batchSize,
    ]);
    return { deleted: Number(rows[0]!.deleted) };
  }

  async retentionHorizon(eventTypes: readonly string[]): Promise<string | undefined> {
    return (await this.retention(eventTypes))?.horizon;
  }

  async retention(eventTypes: readonly string[]): Promise<RetentionPoint | undefined> {
    const { rows } = await this.query<{
      transaction_id: string;
      global_position: string;
      recorded_before: Date;
    }>(RETENTION_HORIZON, [[...eventTypes]]);
    const row = rows[0];
    return row
      ? {
          horizon: encodePgPosition(row.transaction_id, row.global_position),
          recordedBefore: row.recorded_before,
        }
      : undefined;
  }

  comparePositions(a: string, b: string): number {
    return comparePgPositions(a, b);
  }

  isValidPosition(position: string): boolean {
    return isPgPosition(position);
  }

  async ping(): Promise<boolean> {
    try {
      await this.pool.query('SELECT 1 FROM eventstore.streams LIMIT 1');
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.relisten);
    // An open under way ends its own connection once it sees `closed`.
    await this.listening?.catch(() => {});
    const listener = this.listener;
    this.listener = undefined;
    this.listening = undefined;
    this.wakeups.clear();
    await listener?.end().catch(() => {});
  }

  /**
   * Registers a wake-up on every append notification. The wake-up gets what the notification says (the
   * appending transaction and its event types); `listening` settles once notifications are being received
   * (or LISTEN failed and polling alone delivers), so a first read after it misses no append.
   */
  private onAppend(wake: (notice: AppendNotice) => void): AppendWakeup {
    this.wakeups.add(wake);
    this.listening ??= this.listen().catch((error: unknown) => {
      // Polling still delivers everything meanwhile.
      this.listening = undefined;
      this.deafSince ??= Date.now();
      this.notListening(error, LISTEN_RETRY_FIRST_MS);
    });
    return { listening: this.listening, stop: () => this.wakeups.delete(wake) };
  }

  private async listen(): Promise<void> {
    // A dedicated connection: a pooled client carrying a LISTEN would hand it to unrelated work.
    const dedicated = new pg.Client({
      connectionString: this.options.connectionString,
      connectionTimeoutMillis: LISTENER_CONNECT_TIMEOUT_MS,
      keepAlive: true,
      keepAliveInitialDelayMillis: LISTENER_HEARTBEAT_MS,
    });
    dedicated.on('notification', (message) => {
      const notice = parseAppendNotice(message.payload);
      for (const wake of this.wakeups) wake(notice);
    });
    // Without a listener an 'error' would be thrown; a lost connection also ends, handled below with it.
    let failure: unknown;
    dedicated.on('error', (error) => (failure = error));
    try {
      await dedicated.connect();
      // A standby accepts the connection and refuses LISTEN: the connection must not stay open.
      await dedicated.query(`LISTEN ${APPEND_NOTIFICATION_CHANNEL}`);
    } catch (error) {
      await dedicated.end().catch(() => {});
      throw error;
    }
    if (this.closed) return void (await dedicated.end().catch(() => {}));
    this.listener = dedicated;
    const heartbeat = setInterval(() => {
      // A peer that vanished without a reset (a NAT or firewall dropping an idle connection) sends no 'end'.
      dedicated
        .query({ text: 'SELECT 1', query_timeout: LISTENER_CONNECT_TIMEOUT_MS } as pg.QueryConfig)
        .catch((error: unknown) => lost(error));
    }, LISTENER_HEARTBEAT_MS).unref();
    const lost = (error?: unknown) => {
      clearInterval(heartbeat);
      if (this.listener !== dedicated) return;
      this.listener = undefined;
      this.listening = undefined;
      this.deafSince = Date.now();
      void dedicated.end().catch(() => {});
      this.options.logger?.warn(
        { err: error, idlePollMs: this.idlePollMs() },
        'event store: lost the connection that listens for appends; subscriptions see appends at their idle poll until it is open again',
      );
      this.listenAgain(LISTEN_RETRY_FIRST_MS);
    };
    dedicated.once('end', () => lost(failure));
    if (this.deafSince !== undefined) {
      // Appends made while nobody listened were announced to no one: every subscriber reads once.
      this.options.logger?.info(
        { deafMs: Date.now() - this.deafSince, failedTries: this.failedTries },
        'event store: listening for appends; every subscription reads what it missed meanwhile',
      );
      this.deafSince = undefined;
      this.failedTries = 0;
      for (const wake of this.wakeups) wake(ANY_APPEND);
    }
  }

  private idlePollMs(): number {
    return this.options.idlePollMs ?? DEFAULT_IDLE_POLL_MS;
  }

  /**
   * Opening LISTEN failed: tried again after `retryMs`. The first failure of a spell is a warning; the
   * retries of an outage (one every 5 s at most) are debug lines, counted in the line that ends it.
   */
  private notListening(error: unknown, retryMs: number): void {
    if (this.closed) return;
    this.failedTries++;
    this.listenAgain(retryMs);
    // No retry was scheduled when no subscriber is left (or one is already pending): then none is promised.
    const retryInMs = this.relisten === undefined ? undefined : retryMs;
    const fields = { err: error, retryInMs, failedTries: this.failedTries, idlePollMs: this.idlePollMs() };
    const message =
      'event store: could not listen for appends; subscriptions see appends at their idle poll meanwhile';
    if (this.failedTries === 1) this.options.logger?.warn(fields, message);
    else this.options.logger?.debug(fields, message);
  }

  /**
   * Opens LISTEN again after `afterMs`, doubling the wait while it fails. Subscriptions poll only every
   * idlePollMs, so one left deaf by a lost connection (a database restart, a network cut) would otherwise
   * see appends that late for the rest of its life. A new subscriber may open it first; either way, once
   * listening, every subscriber reads once (`listen`).
   */
  private listenAgain(afterMs: number): void {
    if (this.closed || this.relisten !== undefined || this.wakeups.size === 0) return;
    this.relisten = setTimeout(() => {
      this.relisten = undefined;
      if (this.closed || this.listening !== undefined) return;
      this.listening = this.listen().catch((error: unknown) => {
        this.listening = undefined;
        this.notListening(error, Math.min(LISTEN_RETRY_MAX_MS, afterMs * 2));
      });
    }, afterMs);
    this.relisten.unref();
  }

  private async query<R extends pg.QueryResultRow>(
    statement: string | PreparedStatement,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(
        typeof statement === 'string' ? { text: statement, values } : bind(statement, values),
      );
    } catch (error) {
      throw translate(error, undefined);
    }
  }
}

/** The exclusive lower bound of a read: `from` becomes the (transaction, sequence) pair just before it. */
function readStart(options: ReadAllOptions): { transactionId: bigint; globalPosition: bigint } {
  if (options.from !== undefined) {
    const from = decodePgPosition(options.from);
    return { transactionId: from.transactionId, globalPosition: from.globalPosition - 1n };
  }
  return options.after === undefined
    ? { transactionId: 0n, globalPosition: 0n }
    : decodePgPosition(options.after);
}

function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    type: row.event_type,
    data: row.data,
    metadata: row.metadata,
    streamName: row.stream_name,
    revision: BigInt(row.stream_revision),
    position: encodePgPosition(row.transaction_id, row.global_position),
    recordedAt: new Date(row.recorded_ms),
  };
}

function isUniqueViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: string; constraint?: string };
  return e.code === '23505' && e.constraint === constraint;
}

interface AppendRow {
  next_revision: string;
  transaction_id: string;
  last_global_position: string;
}

function toAppendResult(row: AppendRow): AppendResult {
  return {
    nextRevision: BigInt(row.next_revision),
    position: encodePgPosition(row.transaction_id, row.last_global_position),
  };
}

function meetsExpectation(expected: ExpectedRevision, revision: bigint | undefined): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return revision === undefined;
  if (expected === 'stream_exists') return revision !== undefined;
  return revision === expected;
}

function expectedCode(expected: ExpectedRevision): string {
  return String(typeof expected === 'bigint' ? expected : EXPECTED_CODES[expected]);
}

/** Ids, types, data and metadata of events as the append functions take them: one array each. */
function eventColumns(events: readonly NewEvent[]): unknown[] {
  return [
    events.map((e) => e.id),
    events.map((e) => e.type),
    events.map((e) => JSON.stringify(e.data)),
    events.map((e) => (e.metadata ? JSON.stringify(e.metadata) : null)),
  ];
}

function translate(error: unknown, append: StreamAppend | undefined): Error {
  const e = error as { code?: string; detail?: string; message?: string };
  if (e.code === 'DC001' && append) {
    const actual = e.detail === 'no_stream' || e.detail === undefined ? 'no_stream' : BigInt(e.detail);
    return new WrongExpectedRevisionError(append.streamName, append.expectedRevision, actual);
  }
  if (e.code === 'DC002' && append) {
    return new DuplicateEventIdError(e.detail ?? 'unknown', append.streamName);
  }
  if (isConnectionFailure(e.code, e.message)) {
    return new EventStoreUnavailableError('event store database unavailable', { cause: error });
  }
  return error instanceof Error ? error : new Error(String(error));
}

function isConnectionFailure(code: string | undefined, message: string | undefined): boolean {
  if (code && (code.startsWith('08') || code === '57P01' || code === '57P03' || code === 'ECONNREFUSED'))
    return true;
  // The last one is pg-pool's: no connection could be had within connectionTimeoutMillis.
  return /Connection terminated|ECONNREFUSED|connect ETIMEDOUT|timeout exceeded when trying to connect/.test(
    message ?? '',
  );
}
