import { PassThrough } from 'node:stream';
import {
  ANY,
  BACKWARDS,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  type AppendStreamState,
  type EventData,
  type KurrentDBClient,
  type Position,
} from '@kurrent/kurrentdb-client';
import type { ClientRecordedEvent, ClientResolvedEvent } from '../../src/eventstore/kurrentdb/mapping.js';
import { KurrentDbEventStore } from '../../src/eventstore/kurrentdb/adapter.js';

/** A live $all subscription of the fake: the client's stream shape, events written in as they arrive. */
class FakeSubscription extends PassThrough {
  constructor(readonly close: () => void) {
    super({ objectMode: true });
  }
  async unsubscribe(): Promise<void> {
    this.close();
  }
}

/**
 * The part of a KurrentDB client the adapter uses, over an in-memory log: appends check the expected state
 * and throw the client's WrongExpectedVersionError as the server does, reads page the log, a $all
 * subscription sends what is there, reports caught up, then sends what is appended after. For the cases
 * no server runs for (tests/eventstore/kurrentdb.test.ts runs the same against a real one).
 */
export class FakeKurrentDb {
  private readonly log: ClientRecordedEvent[] = [];
  private readonly live = new Set<FakeSubscription>();
  private next = 1n;

  /** The adapter over this fake client. */
  store(): KurrentDbEventStore {
    return new KurrentDbEventStore(this as unknown as KurrentDBClient);
  }

  /** Puts an event into the log as it was recorded elsewhere (its position and time kept). */
  load(event: ClientRecordedEvent): void {
    this.log.push(event);
    if (event.position && event.position.commit >= this.next) this.next = event.position.commit + 1n;
    for (const subscription of this.live) subscription.write({ event });
  }

  async appendToStream(streamName: string, events: EventData[], options: { streamState: AppendStreamState }) {
    const current = this.log.filter((e) => e.streamId === streamName).at(-1)?.revision;
    const state = options.streamState;
    const holds =
      state === ANY ||
      (state === NO_STREAM && current === undefined) ||
      (state === STREAM_EXISTS && current !== undefined) ||
      (typeof state === 'bigint' && state === current);
    if (!holds) {
      throw new WrongExpectedVersionError(undefined, {
        streamName,
        expected: state,
        current: current ?? NO_STREAM,
      });
    }
    let revision = current ?? -1n;
    let position: Position | undefined;
    for (const event of events) {
      position = { commit: this.next, prepare: this.next };
      this.next++;
      revision++;
      // The server keeps the bytes the client sent (JSON.stringify); a read parses them again.
      this.load({
        streamId: streamName,
        id: event.id,
        type: event.type,
        revision,
        created: new Date(),
        data: JSON.parse(JSON.stringify(event.data)) as unknown,
        metadata:
          event.metadata === undefined ? undefined : (JSON.parse(JSON.stringify(event.metadata)) as unknown),
        position,
      });
    }
    return { success: true, nextExpectedRevision: revision, position };
  }

  async *readStream(
    streamName: string,
    options: { fromRevision?: bigint | typeof START; maxCount?: number } = {},
  ): AsyncGenerator<ClientResolvedEvent> {
    const events = this.log.filter((e) => e.streamId === streamName);
    if (events.length === 0) throw new StreamNotFoundError(undefined, streamName);
    const from = typeof options.fromRevision === 'bigint' ? options.fromRevision : 0n;
    const wanted = events.filter((e) => e.revision >= from).slice(0, options.maxCount ?? Infinity);
    for (const event of wanted) yield { event };
  }

  async *readAll(options: {
    fromPosition?: Position | typeof START | 'end';
    maxCount?: number;
    direction?: string;
  }): AsyncGenerator<ClientResolvedEvent> {
    const ordered = [...this.log].sort((a, b) => compare(a.position!, b.position!));
    if (options.direction === BACKWARDS) {
      const last = ordered.at(-1);
      if (last) yield { event: last };
      return;
    }
    const from = options.fromPosition;
    const after = typeof from === 'object' ? ordered.filter((e) => compare(e.position!, from) >= 0) : ordered;
    for (const event of after.slice(0, options.maxCount ?? Infinity)) yield { event };
  }

  subscribeToAll(options: { fromPosition: Position | typeof START }): FakeSubscription {
    const subscription = new FakeSubscription(() => this.live.delete(subscription));
    const from = options.fromPosition;
    setImmediate(() => {
      const backlog = [...this.log]
        .sort((a, b) => compare(a.position!, b.position!))
        .filter((e) => typeof from !== 'object' || compare(e.position!, from) > 0);
      for (const event of backlog) subscription.write({ event });
      subscription.emit('caughtUp', {});
      this.live.add(subscription);
    });
    return subscription;
  }

  async dispose(): Promise<void> {}
}

function compare(a: Position, b: Position): number {
  return a.commit !== b.commit
    ? a.commit < b.commit
      ? -1
      : 1
    : a.prepare < b.prepare
      ? -1
      : a.prepare > b.prepare
        ? 1
        : 0;
}
