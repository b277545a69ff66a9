import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import sinon from 'sinon';
import {
  ANY,
  BACKWARDS,
  DeadlineExceededError,
  END,
  KurrentDBClient,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
  type Position,
  type RegexFilter,
} from '@kurrent/kurrentdb-client';
import {
  EventStoreUnavailableError,
  InvalidPositionError,
  WrongExpectedRevisionError,
  type NewEvent,
  type StreamAppend,
  type SubscriptionBatch,
} from '../../src/eventstore/port.js';
import {
  createKurrentDbEventStore,
  KurrentDbEventStore,
  withNodePreference,
} from '../../src/eventstore/kurrentdb/adapter.js';
import {
  fromStreamState,
  toPortError,
  toRecordedEvent,
  toStreamState,
  type ClientRecordedEvent,
  type ClientResolvedEvent,
} from '../../src/eventstore/kurrentdb/mapping.js';
import { comparePositions, decodePosition, encodePosition } from '../../src/eventstore/kurrentdb/position.js';
import { rejection } from './contract.js';

const max64 = (1n << 64n) - 1n;

function pos(commit: bigint, prepare = commit): Position {
  return { commit, prepare };
}

function recorded(type: string, position: Position | undefined, extra: Partial<ClientRecordedEvent> = {}) {
  return {
    streamId: 'device-1',
    id: randomUUID(),
    type,
    revision: 0n,
    created: new Date('2025-01-02T03:04:05Z'),
    data: { n: 1 },
    metadata: undefined,
    position,
    ...extra,
  } satisfies ClientRecordedEvent;
}

function resolved(
  type: string,
  commit: bigint,
  extra: Partial<ClientRecordedEvent> = {},
): ClientResolvedEvent {
  return { event: recorded(type, pos(commit), extra) };
}

async function* iterate<T>(items: readonly T[], error?: Error): AsyncGenerator<T> {
  for (const item of items) yield item;
  if (error) throw error;
}

function newEvent(type: string): NewEvent {
  return { id: randomUUID(), type, data: { at: type }, metadata: { by: 'test' } };
}

function fakeClient() {
  return {
    appendToStream: sinon.stub(),
    multiStreamAppend: sinon.stub(),
    readStream: sinon.stub(),
    readAll: sinon.stub(),
    subscribeToAll: sinon.stub(),
    dispose: sinon.stub().resolves(),
  };
}

function storeOn(fake: ReturnType<typeof fakeClient>, options = {}) {
  return new KurrentDbEventStore(fake as unknown as KurrentDBClient, options);
}

function within<T>(promise: Promise<T>, ms = 1000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe('KurrentDB adapter (client stubbed)', () => {
  afterEach(() => sinon.restore());

  describe('positions', () => {
    it('round-trips commit and prepare, including values near 2^64', () => {
      for (const p of [pos(0n), pos(1n, 0n), pos(max64, max64 - 1n), pos(1n << 63n, (1n << 63n) - 1n)]) {
        const encoded = encodePosition(p);
        expect(encoded).to.match(/^[0-9a-f]{32}$/);
        expect(decodePosition(encoded)).to.deep.equal(p);
      }
      expect(encodePosition(pos(max64, 0n))).to.equal('ffffffffffffffff0000000000000000');
    });

    it('sorts as strings in global order (commit first, then prepare)', () => {
      const ordered = [
        pos(0n, 0n),
        pos(0n, 1n),
        pos(0xfn, 0xfn),
        pos(0x10n, 0x0n),
        pos(0x10n, max64),
        pos(1n << 32n, 5n),
        pos(max64 - 1n, max64),
        pos(max64, 0n),
        pos(max64, max64),
      ];
      const shuffled = [...ordered].reverse().map(encodePosition);
      expect(shuffled.sort()).to.deep.equal(ordered.map(encodePosition));
      const sortedWithCompare = [...ordered]
        .map(encodePosition)
        .reverse()
        .sort((a, b) => comparePositions(a, b));
      expect(sortedWithCompare).to.deep.equal(ordered.map(encodePosition));
      expect(comparePositions(encodePosition(pos(2n)), encodePosition(pos(2n)))).to.equal(0);
      expect(comparePositions(encodePosition(pos(3n)), encodePosition(pos(2n)))).to.equal(1);
    });

    it('refuses what it did not produce with InvalidPositionError', () => {
      for (const bad of ['', 'abc', 'F'.repeat(32), 'g'.repeat(32), '0'.repeat(31), '0'.repeat(33)]) {
        expect(() => decodePosition(bad)).to.throw(InvalidPositionError);
      }
      expect(() => comparePositions('0'.repeat(32), 'nope')).to.throw(InvalidPositionError);
      expect(storeOn(fakeClient()).isValidPosition('0'.repeat(32))).to.equal(true);
      expect(storeOn(fakeClient()).isValidPosition('0'.repeat(31))).to.equal(false);
    });

    it('refuses the server\'s "no position" (-1) and values past 64 bits instead of wrapping', () => {
      expect(() => encodePosition(pos(-1n, -1n))).to.throw(RangeError);
      expect(() => encodePosition(pos(0n, max64 + 1n))).to.throw(RangeError);
    });
  });

  describe('expected revision', () => {
    it('maps each expectation to the client stream state and back', () => {
      expect(toStreamState('no_stream')).to.equal(NO_STREAM);
      expect(toStreamState('stream_exists')).to.equal(STREAM_EXISTS);
      expect(toStreamState('any')).to.equal(ANY);
      expect(toStreamState(7n)).to.equal(7n);
      for (const expected of ['no_stream', 'stream_exists', 'any', 0n, 41n] as const) {
        expect(fromStreamState(toStreamState(expected))).to.equal(expected);
      }
    });

    it('refuses a negative exact revision (the server would read -1 as "no stream")', () => {
      expect(() => toStreamState(-1n)).to.throw(RangeError);
    });
  });

  describe('errors', () => {
    it('maps WrongExpectedVersionError to WrongExpectedRevisionError with the actual revision', () => {
      const clientError = new WrongExpectedVersionError(undefined, {
        streamName: 's-1',
        expected: 2n,
        current: 5n,
      });
      const error = toPortError(clientError, { streamName: 's-1', expectedRevision: 2n });
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      const typed = error as WrongExpectedRevisionError;
      expect([typed.streamName, typed.expected, typed.actual]).to.deep.equal(['s-1', 2n, 5n]);
    });

    it('maps a missing stream in a WrongExpectedVersionError to no_stream', () => {
      const clientError = new WrongExpectedVersionError(undefined, {
        streamName: 's-2',
        expected: STREAM_EXISTS,
        current: NO_STREAM,
      });
      const typed = toPortError(clientError) as WrongExpectedRevisionError;
      expect(typed).to.be.instanceOf(WrongExpectedRevisionError);
      expect([typed.streamName, typed.expected, typed.actual]).to.deep.equal([
        's-2',
        'stream_exists',
        'no_stream',
      ]);
    });

    it('maps unavailability, deadlines and discovery failures to EventStoreUnavailableError', () => {
      const causes = [
        new UnavailableError(),
        new DeadlineExceededError(),
        new Error('Failed to discover after 10 attempts.'),
        Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:2113'), { code: 'ECONNREFUSED' }),
      ];
      for (const cause of causes) {
        const error = toPortError(cause);
        expect(error, cause.message).to.be.instanceOf(EventStoreUnavailableError);
        expect((error as Error & { cause?: unknown }).cause).to.equal(cause);
      }
    });

    it('passes other errors through unchanged', () => {
      const other = new TypeError('bug');
      expect(toPortError(other)).to.equal(other);
    });
  });

  describe('recorded events', () => {
    it('maps a client event to the port shape', () => {
      const event = recorded('DeviceAdopted', pos(16n, 15n), { revision: 3n, metadata: { by: 'x' } });
      const mapped = toRecordedEvent(event);
      expect(mapped).to.deep.equal({
        id: event.id,
        type: 'DeviceAdopted',
        data: { n: 1 },
        metadata: { by: 'x' },
        streamName: 'device-1',
        revision: 3n,
        position: '0000000000000010000000000000000f',
        recordedAt: new Date('2025-01-02T03:04:05Z'),
      });
    });

    it('reads metadata that is not a JSON object as {}', () => {
      expect(
        toRecordedEvent(recorded('A', pos(1n), { metadata: new Uint8Array([1, 2]) })).metadata,
      ).to.deep.equal({});
      expect(toRecordedEvent(recorded('A', pos(1n), { metadata: [1] })).metadata).to.deep.equal({});
    });

    it('refuses an event without a position (servers before 22.6)', () => {
      expect(() => toRecordedEvent(recorded('A', undefined))).to.throw(/without a position/);
    });
  });

  describe('append', () => {
    it("passes the caller's event ids, types, data and expectation through", async () => {
      const fake = fakeClient();
      fake.appendToStream.resolves({ success: true, nextExpectedRevision: 0n, position: pos(100n, 100n) });
      const event = newEvent('DeviceAdopted');
      const result = await storeOn(fake).append('device-1', [event], 'no_stream');
      expect(fake.appendToStream.calledOnce).to.equal(true);
      const [stream, sent, options] = fake.appendToStream.firstCall.args;
      expect(stream).to.equal('device-1');
      expect(sent).to.deep.equal([
        {
          id: event.id,
          contentType: 'application/json',
          type: 'DeviceAdopted',
          data: { at: 'DeviceAdopted' },
          metadata: { by: 'test' },
        },
      ]);
      expect(options).to.deep.equal({ streamState: NO_STREAM });
      expect(result).to.deep.equal({ nextRevision: 0n, position: encodePosition(pos(100n)) });
    });

    it('takes the position of a several-event append from its last event', async () => {
      const fake = fakeClient();
      fake.appendToStream.resolves({ success: true, nextExpectedRevision: 4n, position: pos(300n, 200n) });
      fake.readStream.returns(iterate([resolved('B', 250n, { revision: 4n })]));
      const result = await storeOn(fake).append('device-1', [newEvent('A'), newEvent('B')], 3n);
      expect(fake.readStream.firstCall.args).to.deep.equal(['device-1', { fromRevision: 4n, maxCount: 1 }]);
      expect(result).to.deep.equal({ nextRevision: 4n, position: encodePosition(pos(250n)) });
    });

    it("answers an idempotent repeat (no position from the server) with the stored event's position", async () => {
      const fake = fakeClient();
      fake.appendToStream.resolves({ success: true, nextExpectedRevision: 0n, position: undefined });
      fake.readStream.returns(iterate([resolved('A', 77n)]));
      const result = await storeOn(fake).append('device-1', [newEvent('A')], 'no_stream');
      expect(result.position).to.equal(encodePosition(pos(77n)));
    });

    it('rejects a wrong expected revision with the typed error and the actual revision', async () => {
      const fake = fakeClient();
      fake.appendToStream.rejects(
        new WrongExpectedVersionError(undefined, { streamName: 'device-1', expected: 0n, current: 1n }),
      );
      const error = await rejection(storeOn(fake).append('device-1', [newEvent('C')], 0n));
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      expect((error as WrongExpectedRevisionError).actual).to.equal(1n);
      expect((error as WrongExpectedRevisionError).expected).to.equal(0n);
    });

    it('refuses an empty append without calling the server', async () => {
      const fake = fakeClient();
      expect(await rejection(storeOn(fake).append('device-1', [], 'any'))).to.be.instanceOf(RangeError);
      expect(fake.appendToStream.called).to.equal(false);
    });
  });

  describe('appendMany (adoption: the hub pairing stream and the new device streams together)', () => {
    const adoption = (): StreamAppend[] => [
      { streamName: 'pairing-h', events: [newEvent('CandidateAdopted')], expectedRevision: 4n },
      { streamName: 'device-d', events: [newEvent('DeviceRegistered')], expectedRevision: 'no_stream' },
    ];

    it('writes every stream in one multi-stream append, metadata packed as one string property', async () => {
      const fake = fakeClient();
      fake.multiStreamAppend.resolves({
        position: 900n,
        responses: [
          { streamName: 'device-d', revision: 0n },
          { streamName: 'pairing-h', revision: 5n },
        ],
      });
      fake.readStream.callsFake((stream: string) =>
        iterate([resolved('X', stream === 'pairing-h' ? 899n : 900n)]),
      );
      const appends = adoption();
      const results = await storeOn(fake).appendMany(appends);

      expect(fake.appendToStream.called, 'no stream appended on its own').to.equal(false);
      expect(fake.multiStreamAppend.calledOnce).to.equal(true);
      const [requests] = fake.multiStreamAppend.firstCall.args;
      expect(requests).to.deep.equal([
        {
          streamName: 'pairing-h',
          expectedState: 4n,
          events: [
            {
              id: appends[0]!.events[0]!.id,
              contentType: 'application/json',
              type: 'CandidateAdopted',
              data: { at: 'CandidateAdopted' },
              metadata: { 'dc.metadata': '{"by":"test"}' },
            },
          ],
        },
        {
          streamName: 'device-d',
          expectedState: NO_STREAM,
          events: [
            {
              id: appends[1]!.events[0]!.id,
              contentType: 'application/json',
              type: 'DeviceRegistered',
              data: { at: 'DeviceRegistered' },
              metadata: { 'dc.metadata': '{"by":"test"}' },
            },
          ],
        },
      ]);
      expect(results).to.deep.equal([
        { nextRevision: 5n, position: encodePosition(pos(899n)) },
        { nextRevision: 0n, position: encodePosition(pos(900n)) },
      ]);
      expect(fake.readStream.getCalls().map((c) => c.args)).to.have.deep.members([
        ['pairing-h', { fromRevision: 5n, maxCount: 1 }],
        ['device-d', { fromRevision: 0n, maxCount: 1 }],
      ]);
    });

    it('reports a conflict on any stream as the typed error for that stream, having written nothing', async () => {
      const fake = fakeClient();
      fake.multiStreamAppend.rejects(
        new WrongExpectedVersionError(undefined, {
          streamName: 'device-d',
          expected: 'no_stream',
          current: 0n,
        }),
      );
      const error = await rejection(storeOn(fake).appendMany(adoption()));
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      expect(error).to.include({ streamName: 'device-d', expected: 'no_stream', actual: 0n });
      expect(fake.appendToStream.called, 'no stream appended on its own').to.equal(false);
    });

    it('passes an unavailable server on as EventStoreUnavailableError without a second try', async () => {
      const fake = fakeClient();
      fake.multiStreamAppend.rejects(new UnavailableError());
      expect(await rejection(storeOn(fake).appendMany(adoption()))).to.be.instanceOf(
        EventStoreUnavailableError,
      );
      expect(fake.appendToStream.called).to.equal(false);
    });

    it('on a server before 25.1 (UNIMPLEMENTED) appends stream by stream, and stops asking', async () => {
      const fake = fakeClient();
      fake.multiStreamAppend.rejects(new UnknownError({ code: 12, message: '12 UNIMPLEMENTED' } as never));
      fake.appendToStream.resolves({ success: true, nextExpectedRevision: 0n, position: pos(1n) });
      const store = storeOn(fake);
      await store.appendMany(adoption());
      await store.appendMany(adoption());
      expect(fake.multiStreamAppend.callCount, 'asked once').to.equal(1);
      expect(fake.appendToStream.getCalls().map((c) => c.args[0])).to.deep.equal([
        'pairing-h',
        'device-d',
        'pairing-h',
        'device-d',
      ]);
    });

    it('stream by stream, the first failure stops the rest (documented: not atomic before 25.1)', async () => {
      const fake = fakeClient();
      fake.multiStreamAppend.rejects(new UnknownError({ code: 12, message: '12 UNIMPLEMENTED' } as never));
      fake.appendToStream
        .onFirstCall()
        .resolves({ success: true, nextExpectedRevision: 0n, position: pos(1n) });
      fake.appendToStream.onSecondCall().rejects(new UnavailableError());
      const error = await rejection(
        storeOn(fake).appendMany([
          ...adoption(),
          { streamName: 'c', events: [newEvent('C')], expectedRevision: 'any' },
        ]),
      );
      expect(error).to.be.instanceOf(EventStoreUnavailableError);
      expect(fake.appendToStream.getCalls().map((c) => c.args[0])).to.deep.equal(['pairing-h', 'device-d']);
    });

    it('appends a single stream with the ordinary append', async () => {
      const fake = fakeClient();
      fake.appendToStream.resolves({ success: true, nextExpectedRevision: 0n, position: pos(1n) });
      await storeOn(fake).appendMany([
        adoption()[1]!,
        { streamName: 'e', events: [], expectedRevision: 'any' },
      ]);
      expect(fake.multiStreamAppend.called).to.equal(false);
      expect(fake.appendToStream.calledOnce).to.equal(true);
    });

    it('reads packed metadata back as the object it was', () => {
      const event = recorded('A', pos(1n), {
        metadata: { 'dc.metadata': '{"actor":{"kind":"client"},"n":2}' },
      });
      expect(toRecordedEvent(event).metadata).to.deep.equal({ actor: { kind: 'client' }, n: 2 });
    });
  });

  describe('readStream', () => {
    it('reads a missing stream as []', async () => {
      const fake = fakeClient();
      fake.readStream.returns(iterate([], new StreamNotFoundError(undefined, 'nope')));
      expect(await storeOn(fake).readStream('nope')).to.deep.equal([]);
    });

    it('reads from the start by default and from a revision when asked', async () => {
      const fake = fakeClient();
      fake.readStream.callsFake(() => iterate([resolved('A', 5n), resolved('B', 6n)]));
      const store = storeOn(fake);
      expect((await store.readStream('s')).map((e) => e.type)).to.deep.equal(['A', 'B']);
      await store.readStream('s', { fromRevision: 1n, maxCount: 10 });
      expect(fake.readStream.firstCall.args[1]).to.deep.equal({ fromRevision: START });
      expect(fake.readStream.secondCall.args[1]).to.deep.equal({ fromRevision: 1n, maxCount: 10 });
    });

    it('reports an unreachable server as EventStoreUnavailableError', async () => {
      const fake = fakeClient();
      fake.readStream.returns(iterate([], new UnavailableError()));
      expect(await rejection(storeOn(fake).readStream('s'))).to.be.instanceOf(EventStoreUnavailableError);
    });
  });

  describe('readAll', () => {
    it('skips $ system events and moves lastPosition past them', async () => {
      const fake = fakeClient();
      fake.readAll.returns(
        iterate([resolved('A', 1n), resolved('$metadata', 2n), resolved('B', 3n), resolved('$>', 4n)]),
      );
      const page = await storeOn(fake).readAll({ maxCount: 10 });
      expect(page.events.map((e) => e.type)).to.deep.equal(['A', 'B']);
      expect(page.lastPosition).to.equal(encodePosition(pos(4n)));
      expect(page.atEnd).to.equal(true);
      expect(fake.readAll.firstCall.args[0]).to.deep.equal({ fromPosition: START, maxCount: 10 });
    });

    it('reads strictly after `after`, dropping the event the server repeats at that position', async () => {
      const fake = fakeClient();
      fake.readAll.returns(iterate([resolved('A', 5n), resolved('B', 6n), resolved('C', 7n)]));
      const page = await storeOn(fake).readAll({ after: encodePosition(pos(5n)), maxCount: 2 });
      expect(fake.readAll.firstCall.args[0]).to.deep.equal({ fromPosition: pos(5n), maxCount: 3 });
      expect(page.events.map((e) => e.type)).to.deep.equal(['B', 'C']);
      expect(page.lastPosition).to.equal(encodePosition(pos(7n)));
      expect(page.atEnd).to.equal(false);
    });

    it('filters by event type while still advancing the position', async () => {
      const fake = fakeClient();
      fake.readAll.returns(iterate([resolved('Wanted', 1n), resolved('Other', 2n)]));
      const page = await storeOn(fake).readAll({ maxCount: 5, eventTypes: ['Wanted'] });
      expect(page.events.map((e) => e.type)).to.deep.equal(['Wanted']);
      expect(page.lastPosition).to.equal(encodePosition(pos(2n)));
    });

    it('reports an empty page at the end without a position', async () => {
      const fake = fakeClient();
      fake.readAll.returns(iterate([]));
      expect(await storeOn(fake).readAll({ maxCount: 5 })).to.deep.equal({
        events: [],
        lastPosition: undefined,
        atEnd: true,
      });
    });
  });

  describe('headPosition, ping, close', () => {
    it('reads the last non-system event backwards', async () => {
      const fake = fakeClient();
      fake.readAll.returns(iterate([resolved('A', 9n)]));
      expect(await storeOn(fake).headPosition()).to.equal(encodePosition(pos(9n)));
      const options = fake.readAll.firstCall.args[0];
      expect([options.direction, options.fromPosition, options.maxCount]).to.deep.equal([BACKWARDS, END, 1]);
      expect((options.filter as RegexFilter).regex).to.equal('^[^$].*');
    });

    it('answers undefined for an empty store', async () => {
      const fake = fakeClient();
      fake.readAll.returns(iterate([]));
      expect(await storeOn(fake).headPosition()).to.equal(undefined);
    });

    it('pings true when the server answers, false on error or silence', async () => {
      const fake = fakeClient();
      fake.readAll.onFirstCall().returns(iterate([resolved('A', 1n)]));
      fake.readAll.onSecondCall().returns(iterate([], new UnavailableError()));
      fake.readAll.onThirdCall().returns({
        [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => {}) }),
      });
      const store = storeOn(fake, { pingTimeoutMs: 20 });
      expect(await store.ping()).to.equal(true);
      expect(await store.ping()).to.equal(false);
      expect(await within(store.ping())).to.equal(false);
    });

    it('disposes the client on close', async () => {
      const fake = fakeClient();
      await storeOn(fake).close();
      expect(fake.dispose.calledOnce).to.equal(true);
    });

    it('builds a client from a connection string, reading esdb:// as kurrentdb://', () => {
      const client = fakeClient() as unknown as KurrentDBClient;
      const connect = sinon.stub(KurrentDBClient, 'connectionString').returns(client);
      const store = createKurrentDbEventStore('esdb://localhost:2113?tls=false');
      expect(store.kind).to.equal('kurrentdb');
      expect(connect.firstCall.args[0]).to.equal('kurrentdb://localhost:2113?tls=false');
    });
  });

  describe('subscribeToAll', () => {
    class FakeSubscription extends PassThrough {
      readonly unsubscribe = sinon.stub().resolves();
      constructor() {
        super({ objectMode: true });
      }
    }

    function subscribe(options: { after?: string; eventTypes?: string[]; batchSize?: number } = {}) {
      const fake = fakeClient();
      const source = new FakeSubscription();
      fake.subscribeToAll.returns(source);
      const controller = new AbortController();
      const store = storeOn(fake);
      const subscription = store.subscribeToAll({ ...options, signal: controller.signal });
      const iterator = subscription[Symbol.asyncIterator]();
      const next = () => within(iterator.next());
      const clientOptions = () => fake.subscribeToAll.firstCall.args[0];
      return { fake, source, controller, iterator, next, clientOptions };
    }

    const batchOf = (result: IteratorResult<SubscriptionBatch>) => {
      expect(result.done).to.equal(false);
      const batch = result.value as SubscriptionBatch;
      return {
        types: batch.events.map((e) => e.type),
        checkpoint: batch.checkpoint,
        caughtUp: batch.caughtUp,
      };
    };

    it('subscribes exclusively after the given position and excludes system events on the server', async () => {
      const s = subscribe({ after: encodePosition(pos(42n, 41n)) });
      const first = s.next();
      const options = s.clientOptions();
      expect(options.fromPosition).to.deep.equal(pos(42n, 41n));
      expect(options.filter.regex).to.equal('^[^$].*');
      s.controller.abort();
      expect((await first).done).to.equal(true);
    });

    it('filters on exactly the wanted event types, escaped and anchored', async () => {
      const s = subscribe({ eventTypes: ['reading.recorded', 'Command(v2)'] });
      const first = s.next();
      expect(s.clientOptions().filter.regex).to.equal('^(?:reading\\.recorded|Command\\(v2\\))$');
      s.controller.abort();
      await first;
    });

    it('batches events that arrive together, then signals caught up with the last position', async () => {
      const s = subscribe({ batchSize: 2 });
      const first = s.next();
      s.source.write(resolved('A', 1n));
      s.source.write(resolved('$metadata', 2n));
      s.source.write(resolved('B', 3n));
      s.source.write(resolved('C', 4n));
      s.source.emit('caughtUp', {});
      expect(batchOf(await first)).to.deep.equal({
        types: ['A', 'B'],
        checkpoint: encodePosition(pos(3n)),
        caughtUp: false,
      });
      expect(batchOf(await s.next())).to.deep.equal({
        types: ['C'],
        checkpoint: encodePosition(pos(4n)),
        caughtUp: false,
      });
      expect(batchOf(await s.next())).to.deep.equal({
        types: [],
        checkpoint: encodePosition(pos(4n)),
        caughtUp: true,
      });
      s.controller.abort();
      expect((await s.next()).done).to.equal(true);
    });

    it('holds caught-up back until the events the client still buffers were delivered', async () => {
      const s = subscribe();
      const first = s.next();
      s.source.pause();
      s.source.write(resolved('A', 1n));
      s.source.write(resolved('B', 2n));
      expect(s.source.readableLength).to.equal(2);
      s.source.emit('caughtUp', {});
      s.source.resume();
      expect(batchOf(await first)).to.deep.equal({
        types: ['A', 'B'],
        checkpoint: encodePosition(pos(2n)),
        caughtUp: false,
      });
      expect(batchOf(await s.next())).to.deep.equal({
        types: [],
        checkpoint: encodePosition(pos(2n)),
        caughtUp: true,
      });
      s.controller.abort();
    });

    it('carries server checkpoints: on the caught-up batch while catching up, as empty batches once live', async () => {
      const s = subscribe();
      const first = s.next();
      const checkpointReached = s.clientOptions().filter.checkpointReached;
      await checkpointReached(s.source, pos(10n));
      // Time for the iterator to see the checkpoint on its own: it must not report it as a batch yet.
      await new Promise((resolve) => setTimeout(resolve, 20));
      s.source.emit('caughtUp', {});
      expect(batchOf(await first)).to.deep.equal({
        types: [],
        checkpoint: encodePosition(pos(10n)),
        caughtUp: true,
      });
      await checkpointReached(s.source, pos(20n));
      expect(batchOf(await s.next())).to.deep.equal({
        types: [],
        checkpoint: encodePosition(pos(20n)),
        caughtUp: true,
      });
      s.controller.abort();
    });

    it('ends when the signal aborts and unsubscribes', async () => {
      const s = subscribe();
      const waiting = s.next();
      s.controller.abort();
      expect((await waiting).done).to.equal(true);
      expect(s.source.unsubscribe.calledOnce).to.equal(true);
      expect(s.source.listenerCount('data')).to.equal(0);
    });

    it('unsubscribes when the consumer stops iterating', async () => {
      const s = subscribe();
      const first = s.next();
      s.source.write(resolved('A', 1n));
      await first;
      await s.iterator.return?.(undefined);
      expect(s.source.unsubscribe.calledOnce).to.equal(true);
    });

    it('does not subscribe at all when the signal has already aborted', async () => {
      const fake = fakeClient();
      const controller = new AbortController();
      controller.abort();
      const iterator = storeOn(fake).subscribeToAll({ signal: controller.signal })[Symbol.asyncIterator]();
      expect((await iterator.next()).done).to.equal(true);
      expect(fake.subscribeToAll.called).to.equal(false);
    });

    it('delivers what arrived, then fails with EventStoreUnavailableError when the connection drops', async () => {
      const s = subscribe();
      const first = s.next();
      s.source.write(resolved('A', 1n));
      s.source.emit('error', new UnavailableError());
      s.source.write(resolved('B', 2n));
      expect(batchOf(await first).types).to.deep.equal(['A']);
      expect(await rejection(s.next())).to.be.instanceOf(EventStoreUnavailableError);
      expect(s.source.unsubscribe.calledOnce).to.equal(true);
    });

    it('refuses a malformed resume position before subscribing', () => {
      const fake = fakeClient();
      expect(() => storeOn(fake).subscribeToAll({ after: 'not-a-position' })).to.throw(InvalidPositionError);
    });
  });

  describe('follower reads (a 3-node cluster)', () => {
    it('sets the node preference on the connection string, whatever it said before', () => {
      expect(withNodePreference('kurrentdb+discover://a:2113,b:2113,c:2113', 'follower')).to.equal(
        'kurrentdb+discover://a:2113,b:2113,c:2113?nodePreference=follower',
      );
      expect(
        withNodePreference(
          'kurrentdb://a:2113?tls=true&NODEPREFERENCE=leader&keepAliveInterval=10000',
          'follower',
        ),
      ).to.equal('kurrentdb://a:2113?tls=true&keepAliveInterval=10000&nodePreference=follower');
    });

    it('subscribes on the followers; appends, stream reads, $all reads and the head stay on the leader', async () => {
      const leader = fakeClient();
      const followers = fakeClient();
      const connect = sinon.stub(KurrentDBClient, 'connectionString');
      connect.onFirstCall().returns(leader as unknown as KurrentDBClient);
      connect.onSecondCall().returns(followers as unknown as KurrentDBClient);
      const store = createKurrentDbEventStore('esdb+discover://a:2113,b:2113,c:2113?tls=false', {
        followerReads: true,
      });
      expect(connect.args.map(([url]) => url)).to.deep.equal([
        'kurrentdb+discover://a:2113,b:2113,c:2113?tls=false',
        'kurrentdb+discover://a:2113,b:2113,c:2113?tls=false&nodePreference=follower',
      ]);

      leader.readAll.returns(iterate([resolved('A', 5n)]));
      expect((await store.readAll({ maxCount: 10 })).events.map((e) => e.type)).to.deep.equal(['A']);
      followers.subscribeToAll.returns(
        Object.assign(new PassThrough({ objectMode: true }), { unsubscribe: sinon.stub().resolves() }),
      );
      const controller = new AbortController();
      const first = store.subscribeToAll({ signal: controller.signal })[Symbol.asyncIterator]().next();
      expect(followers.subscribeToAll.calledOnce, 'subscribed on the followers').to.equal(true);
      controller.abort();
      await within(first);

      leader.appendToStream.resolves({ success: true, nextExpectedRevision: 0n, position: pos(9n) });
      await store.append('device-1', [newEvent('B')], 'no_stream');
      leader.readStream.returns(iterate([resolved('B', 9n)]));
      await store.readStream('device-1');
      leader.readAll.returns(iterate([resolved('B', 9n)]));
      expect(await store.headPosition()).to.equal(encodePosition(pos(9n)));
      expect(leader.readAll.callCount).to.equal(2);
      expect([
        followers.appendToStream.called,
        followers.readStream.called,
        followers.readAll.called,
      ]).to.deep.equal([false, false, false]);

      await store.close();
      expect([leader.dispose.calledOnce, followers.dispose.calledOnce]).to.deep.equal([true, true]);
    });

    it('uses one client when follower reads are off', () => {
      const connect = sinon
        .stub(KurrentDBClient, 'connectionString')
        .returns(fakeClient() as unknown as KurrentDBClient);
      createKurrentDbEventStore('kurrentdb://a:2113');
      expect(connect.callCount).to.equal(1);
    });
  });
});
