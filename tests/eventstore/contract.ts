import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import { activeAuditSigner } from '../../src/audit/signing-keys.js';
import {
  DuplicateEventIdError,
  WrongExpectedRevisionError,
  type EventStore,
  type NewEvent,
  type RecordedEvent,
} from '../../src/eventstore/port.js';
import * as auditChain from '../support/audit-chain.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

/**
 * The behaviour every event-store adapter must show. `burst` writes `transactions` appends concurrently,
 * in a way that makes commits finish out of order where the adapter can be made to (Postgres: random
 * delays inside open transactions); it returns the ids it wrote.
 */
export interface ContractTarget {
  store: EventStore;
  /**
   * KurrentDB neither enforces event-id uniqueness across streams nor guarantees idempotence for a
   * concurrent repeat with `any`; those cases are reported as pending for it, not silently absent.
   */
  globalEventIdUniqueness: boolean;
  burst(transactions: number, eventsEach: number): Promise<string[]>;
}

export function eventStoreContract(open: () => Promise<ContractTarget & { close(): Promise<void> }>) {
  let target: ContractTarget & { close(): Promise<void> };
  let store: EventStore;
  const stream = () => `contract-${randomUUID()}`;

  beforeEach(async function () {
    target = await open();
    store = target.store;
  });
  afterEach(async () => {
    await target?.close();
  });

  describe('append and read a stream', () => {
    it('appends to a new stream and reads the events back in order', async () => {
      const name = stream();
      const result = await store.append(
        name,
        [event('Opened', { n: 1 }), event('Renamed', { n: 2 })],
        'no_stream',
      );
      expect(result.nextRevision).to.equal(1n);
      const read = await store.readStream(name);
      expect(read.map((e) => [e.type, e.revision, (e.data as { n: number }).n])).to.deep.equal([
        ['Opened', 0n, 1],
        ['Renamed', 1n, 2],
      ]);
      expect(read[1]!.position).to.equal(result.position);
      expect(store.comparePositions(read[0]!.position, read[1]!.position)).to.equal(-1);
    });

    it('reads a missing stream as empty', async () => {
      expect(await store.readStream(stream())).to.deep.equal([]);
    });

    it('keeps data and metadata as JSON', async () => {
      const name = stream();
      await store.append(
        name,
        [{ ...event('Tagged', { nested: { a: [1, 'x', true, null] } }), metadata: { by: 'test' } }],
        'any',
      );
      const [read] = await store.readStream(name);
      expect(read!.data).to.deep.equal({ nested: { a: [1, 'x', true, null] } });
      expect(read!.metadata).to.deep.equal({ by: 'test' });
    });
  });

  describe('expected revision', () => {
    it('refuses no_stream on an existing stream with a typed error carrying the actual revision', async () => {
      const name = stream();
      await store.append(name, [event('A'), event('B')], 'no_stream');
      const error = await rejection(store.append(name, [event('C')], 'no_stream'));
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      expect((error as WrongExpectedRevisionError).actual).to.equal(1n);
    });

    it('refuses a stale exact revision and accepts the current one', async () => {
      const name = stream();
      await store.append(name, [event('A')], 'no_stream');
      await store.append(name, [event('B')], 0n);
      const error = await rejection(store.append(name, [event('C')], 0n));
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      expect((error as WrongExpectedRevisionError).actual).to.equal(1n);
      expect((await store.append(name, [event('C')], 1n)).nextRevision).to.equal(2n);
    });

    it('refuses stream_exists and an exact revision on a missing stream', async () => {
      const e1 = await rejection(store.append(stream(), [event('A')], 'stream_exists'));
      expect(e1).to.be.instanceOf(WrongExpectedRevisionError);
      expect((e1 as WrongExpectedRevisionError).actual).to.equal('no_stream');
      const e2 = await rejection(store.append(stream(), [event('A')], 0n));
      expect(e2).to.be.instanceOf(WrongExpectedRevisionError);
    });

    it('lets exactly one of many concurrent appends at the same revision win', async () => {
      const name = stream();
      await store.append(name, [event('A')], 'no_stream');
      const outcomes = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) => store.append(name, [event('Raced', { i })], 0n)),
      );
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      expect(won).to.have.length(1);
      for (const lost of outcomes.filter((o) => o.status === 'rejected')) {
        expect((lost as PromiseRejectedResult).reason).to.be.instanceOf(WrongExpectedRevisionError);
      }
      expect(await store.readStream(name)).to.have.length(2);
    });

    it('appends with any whatever the stream holds', async () => {
      const name = stream();
      await store.append(name, [event('A')], 'any');
      const result = await store.append(name, [event('B'), event('C')], 'any');
      expect(result.nextRevision).to.equal(2n);
    });
  });

  describe('idempotent append by event id', () => {
    it('stores a repeated append once and answers it like the first', async () => {
      const name = stream();
      const batch = [event('A'), event('B')];
      const first = await store.append(name, batch, 'no_stream');
      const again = await store.append(name, batch, 'no_stream');
      expect(again).to.deep.equal(first);
      const againAny = await store.append(name, batch, 'any');
      expect(againAny.position).to.equal(first.position);
      expect(await store.readStream(name)).to.have.length(2);
    });

    it('stores concurrent identical appends once', async function () {
      if (!target.globalEventIdUniqueness) this.skip();
      const name = stream();
      const batch = [event('A'), event('B')];
      const results = await Promise.all(Array.from({ length: 8 }, () => store.append(name, batch, 'any')));
      expect(new Set(results.map((r) => r.position)).size).to.equal(1);
      expect(await store.readStream(name)).to.have.length(2);
    });

    it('refuses an event id that already sits in another stream', async function () {
      if (!target.globalEventIdUniqueness) this.skip();
      const shared = event('A');
      await store.append(stream(), [shared], 'any');
      const error = await rejection(store.append(stream(), [shared], 'any'));
      expect(error).to.be.instanceOf(DuplicateEventIdError);
    });
  });

  describe('append to several streams at once (adoption)', () => {
    it('writes every stream, each at its expected revision, with its metadata', async () => {
      const [hub, device] = [stream(), stream()];
      await store.append(hub, [event('WindowOpened')], 'no_stream');
      const [hubResult, deviceResult] = await store.appendMany([
        {
          streamName: hub,
          events: [{ ...event('Adopted'), metadata: { actor: { kind: 'client' } } }],
          expectedRevision: 0n,
        },
        {
          streamName: device,
          events: [event('Registered'), event('Granted')],
          expectedRevision: 'no_stream',
        },
      ]);
      expect(hubResult!.nextRevision).to.equal(1n);
      expect(deviceResult!.nextRevision).to.equal(1n);
      const hubEvents = await store.readStream(hub);
      expect(hubEvents.map((e) => e.type)).to.deep.equal(['WindowOpened', 'Adopted']);
      expect(hubEvents[1]!.metadata).to.deep.equal({ actor: { kind: 'client' } });
      expect(hubEvents[1]!.position).to.equal(hubResult!.position);
      expect((await store.readStream(device)).map((e) => e.type)).to.deep.equal(['Registered', 'Granted']);
    });

    it('writes nothing at all when any stream is not at its expected revision', async () => {
      const [hub, device] = [stream(), stream()];
      await store.append(device, [event('AlreadyThere')], 'no_stream');
      let error: unknown;
      try {
        await store.appendMany([
          { streamName: hub, events: [event('Adopted')], expectedRevision: 'no_stream' },
          { streamName: device, events: [event('Registered')], expectedRevision: 'no_stream' },
        ]);
      } catch (e) {
        error = e;
      }
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      expect((error as WrongExpectedRevisionError).streamName).to.equal(device);
      expect(await store.readStream(hub), 'the first stream was not written').to.deep.equal([]);
      expect((await store.readStream(device)).map((e) => e.type)).to.deep.equal(['AlreadyThere']);
    });

    it('names the stream that was not at its expected revision, whichever place it had', async () => {
      const [behind, fine] = [stream(), stream()];
      await store.append(behind, [event('First'), event('Second')], 'no_stream');
      let error: unknown;
      try {
        await store.appendMany([
          { streamName: behind, events: [event('Late')], expectedRevision: 0n },
          { streamName: fine, events: [event('Registered')], expectedRevision: 'no_stream' },
        ]);
      } catch (e) {
        error = e;
      }
      expect(error).to.be.instanceOf(WrongExpectedRevisionError);
      expect((error as WrongExpectedRevisionError).streamName).to.equal(behind);
      expect((error as WrongExpectedRevisionError).actual).to.equal(1n);
      expect(await store.readStream(fine)).to.deep.equal([]);
    });
  });

  describe('batch append (ingest)', () => {
    it('appends to many streams in one batch, numbering each stream on from where it was', async () => {
      const [a, b] = [stream(), stream()];
      await store.append(a, [event('Seed')], 'no_stream');
      const batch = [a, b, a, b, a].map((streamName, i) => ({ streamName, event: event('Reading', { i }) }));
      const results = await store.appendBatch(batch);
      expect(results.map((r) => r.inserted)).to.deep.equal([true, true, true, true, true]);
      expect((await store.readStream(a)).map((e) => [e.revision, e.type])).to.deep.equal([
        [0n, 'Seed'],
        [1n, 'Reading'],
        [2n, 'Reading'],
        [3n, 'Reading'],
      ]);
      expect((await store.readStream(a)).slice(1).map((e) => (e.data as { i: number }).i)).to.deep.equal([
        0, 2, 4,
      ]);
      expect((await store.readStream(b)).map((e) => (e.data as { i: number }).i)).to.deep.equal([1, 3]);
    });

    it('skips ids already stored or repeated within the batch, reporting their stored position', async function () {
      if (!target.globalEventIdUniqueness) this.skip();
      const name = stream();
      const first = event('Reading', { n: 1 });
      const [stored] = await store.appendBatch([{ streamName: name, event: first }]);
      const second = event('Reading', { n: 2 });
      const results = await store.appendBatch([
        { streamName: name, event: first },
        { streamName: name, event: second },
        { streamName: name, event: second },
      ]);
      expect(results.map((r) => [r.id, r.inserted])).to.deep.equal([
        [first.id, false],
        [second.id, true],
      ]);
      expect(results[0]!.position).to.equal(stored!.position);
      expect((await store.readStream(name)).map((e) => e.revision)).to.deep.equal([0n, 1n]);
    });

    it('stores concurrent overlapping batches once each, without deadlock', async function () {
      if (!target.globalEventIdUniqueness) this.skip();
      const streams = [stream(), stream(), stream()];
      const events = Array.from({ length: 30 }, (_, i) => ({
        streamName: streams[i % 3]!,
        event: event('Reading', { i }),
      }));
      const shuffled = () => [...events].sort(() => Math.random() - 0.5);
      await Promise.all(Array.from({ length: 6 }, () => store.appendBatch(shuffled())));
      const stored = (await Promise.all(streams.map((s) => store.readStream(s)))).flat();
      expect(stored).to.have.length(30);
      for (const s of streams) {
        const revisions = (await store.readStream(s)).map((e) => e.revision);
        expect(revisions).to.deep.equal(revisions.map((_, i) => BigInt(i)));
      }
    });
  });

  describe('global order', () => {
    it('reads the global order in pages and resumes exactly after a saved position', async () => {
      const before = await store.headPosition();
      const names = [stream(), stream()];
      for (let i = 0; i < 10; i++) await store.append(names[i % 2]!, [event('N', { i })], 'any');
      const seen = await readEverything(store, before, 3, names, 10);
      expect(seen.map((e) => (e.data as { i: number }).i)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      const resumed = await readEverything(store, seen[4]!.position, 100, names, 5);
      expect(resumed.map((e) => (e.data as { i: number }).i)).to.deep.equal([5, 6, 7, 8, 9]);
    });

    it('reads from a position inclusively when asked with from', async () => {
      const before = await store.headPosition();
      const name = stream();
      for (let i = 0; i < 4; i++) await store.append(name, [event('N', { i })], 'any');
      const all = await readEverything(store, before, 100, [name], 4);
      const page = await store.readAll({ from: all[2]!.position, maxCount: 100 });
      const ours = page.events.filter((e) => e.streamName === name);
      expect(ours.map((e) => (e.data as { i: number }).i)).to.deep.equal([2, 3]);
    });

    it('filters by event type and still moves the position past what it skipped', async () => {
      const before = await store.headPosition();
      const name = stream();
      const wanted = `Wanted${randomUUID().slice(0, 8)}`;
      await store.append(name, [event('Other'), event(wanted, { k: 1 }), event('Other')], 'no_stream');
      const last = (await store.readStream(name)).at(-1)!;
      // Wait out the visibility horizon (another suite's open transaction) until the whole append is visible.
      let page = await store.readAll({ after: before, maxCount: 100, eventTypes: [wanted] });
      for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
        if (page.lastPosition !== undefined && store.comparePositions(page.lastPosition, last.position) >= 0)
          break;
        await sleep(20);
        page = await store.readAll({ after: before, maxCount: 100, eventTypes: [wanted] });
      }
      expect(page.events.map((e) => e.type)).to.deep.equal([wanted]);
      expect(page.atEnd).to.equal(true);
      expect(store.comparePositions(page.lastPosition!, last.position)).to.be.at.least(0);
    });

    it('delivers every event exactly once, in position order, to subscribers started before, during and after a burst of concurrent transactions', async function () {
      this.timeout(60_000);
      const start = await store.headPosition();
      const controller = new AbortController();
      const collect = (from: string | undefined) => collectUntil(store, from, controller.signal);
      const early = collect(start);
      const burst = target.burst(30, 4);
      await sleep(30);
      const during = collect(start);
      const ids = await burst;
      const late = collect(start);
      const expected = new Set(ids);
      const results = await Promise.all([early, during, late].map((c) => c.until(expected)));
      controller.abort();
      for (const seen of results) {
        const ours = seen.filter((e) => expected.has(e.id));
        expect(ours.map((e) => e.id)).to.have.members(ids);
        expect(new Set(ours.map((e) => e.id)).size).to.equal(ours.length, 'no event twice');
        const positions = seen.map((e) => e.position);
        expect(positions).to.deep.equal([...positions].sort((a, b) => store.comparePositions(a, b)));
      }
    });

    it('resumes a subscription from a saved position with exactly what followed it', async () => {
      const name = stream();
      await store.append(name, [event('A'), event('B'), event('C'), event('D')], 'no_stream');
      const all = await store.readStream(name);
      const controller = new AbortController();
      const got = await collectUntil(store, all[1]!.position, controller.signal).until(new Set([all[3]!.id]));
      controller.abort();
      expect(got.filter((e) => e.streamName === name).map((e) => e.type)).to.deep.equal(['C', 'D']);
    });
  });

  /**
   * The audit chain over this store (docs/audit.md): the projector follows the store's subscription into
   * read models in PostgreSQL, and checkpoints are appended to the store at an expected revision. The
   * events of other cases share the store, so each case looks only at projects of its own.
   */
  describe('audit chain and checkpoints', () => {
    let readModels: TestDatabase | undefined;
    afterEach(async () => {
      sinon.restore();
      await readModels?.drop();
      readModels = undefined;
    });
    const ours = (projects: string[]) => (links: auditChain.LinkRow[]) =>
      links.filter((l) => projects.includes(l.projectId));

    it('hands back data whose JSON.stringify is the text appended, by every kind of append', async () => {
      const tricky = {
        projectId: 'prj_x',
        text: 'Büro "Süd" ⚡😀\n\t\\ \u2028 </script>',
        n: [0, -1.5, 1e21, 2 ** 53],
        nil: null,
      };
      const ids: string[] = [randomUUID(), randomUUID(), randomUUID()];
      const name = stream();
      const metadata = { correlationId: 'corr-1', note: 'Süd' };
      await store.append(name, [{ id: ids[0]!, type: 'Tricky', data: tricky, metadata }], 'no_stream');
      await store.appendMany([
        {
          streamName: stream(),
          events: [{ id: ids[1]!, type: 'Tricky', data: tricky }],
          expectedRevision: 'no_stream',
        },
      ]);
      await store.appendBatch([
        { streamName: stream(), event: { id: ids[2]!, type: 'Tricky', data: tricky } },
      ]);
      const found: RecordedEvent[] = [];
      for (
        let after: string | undefined, deadline = Date.now() + 30_000;
        found.length < 3 && Date.now() < deadline;
      ) {
        const page = await store.readAll({
          after,
          maxCount: 1000,
          eventTypes: ['Tricky'],
          dataAsStored: true,
        });
        found.push(...page.events.filter((e) => ids.includes(e.id)));
        if (page.lastPosition !== undefined) after = page.lastPosition;
        if (page.atEnd && found.length < 3) await sleep(20);
      }
      expect(found).to.have.length(3);
      for (const e of found) expect(e.dataText ?? JSON.stringify(e.data)).to.equal(JSON.stringify(tricky));
      // Read as stored, an event is otherwise the event every other read hands back (data parsed, metadata too).
      const plain = await store.readStream(name);
      const asStored = found.find((e) => e.id === ids[0])!;
      expect(plain).to.have.length(1);
      expect(plain[0]!.metadata).to.deep.include(metadata);
      for (const key of [
        'id',
        'type',
        'data',
        'metadata',
        'streamName',
        'revision',
        'position',
        'recordedAt',
      ] as const) {
        expect(asStored[key], key).to.deep.equal(plain[0]![key]);
      }
    });

    it('chains the control history through its subscription as the domain computes it', async () => {
      readModels = await freshDatabase();
      const projects = [`prj_${randomUUID().slice(0, 8)}`, `prj_${randomUUID().slice(0, 8)}`];
      await auditChain.projectChainUntil(
        readModels,
        store,
        await auditChain.appendProjectHistories(store, projects),
      );
      const links = ours(projects)(await auditChain.storedLinks(readModels.pool));
      expect(links).to.have.length(16);
      expect(links).to.deep.equal(ours(projects)(await auditChain.expectedChain(store)));
    });

    it('records one checkpoint per sequence when two signers race', async () => {
      readModels = await freshDatabase();
      const project = `prj_${randomUUID().slice(0, 8)}`;
      await auditChain.appendProjectHistory(store, project);
      await auditChain.projectChainUntil(readModels, store, (await store.headPosition())!);
      await readModels.pool.query('DELETE FROM audit_chain_heads WHERE project_id <> $1', [project]);
      const signer = await activeAuditSigner(readModels.pool);
      const { outcomes } = auditChain.raceOnAuditStreams(store);
      expect(await auditChain.signTwiceAtOnce(store, readModels.pool, signer, new Date())).to.deep.equal([
        `${project}#0`,
      ]);
      expect(outcomes.sort()).to.deep.equal(['appended', 'wrong revision']);
      sinon.restore();
      await auditChain.expectContinuousCheckpoints(store, readModels.pool, project, [8]);
    });
  });
}

function event(type: string, data: Record<string, unknown> = {}): NewEvent {
  return { id: randomUUID(), type, data };
}

/** What `promise` rejects with; a promise that resolves fails the test. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/**
 * Reads the global order in pages until `expected` events of `streams` have been seen. The end a reader sees
 * is the visibility horizon, not the last commit: a transaction open anywhere on the server (another suite
 * sharing it) holds committed events back for a moment, so reaching the end early is waited out, not taken
 * as the answer.
 */
async function readEverything(
  store: EventStore,
  after: string | undefined,
  pageSize: number,
  streams: string[],
  expected: number,
) {
  const out: RecordedEvent[] = [];
  const deadline = Date.now() + 30_000;
  for (;;) {
    const page = await store.readAll({ after, maxCount: pageSize });
    out.push(...page.events.filter((e) => streams.includes(e.streamName)));
    if (page.lastPosition !== undefined) after = page.lastPosition;
    if (!page.atEnd) continue;
    if (out.length >= expected || Date.now() > deadline) return out;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function collectUntil(store: EventStore, after: string | undefined, signal: AbortSignal) {
  const seen: RecordedEvent[] = [];
  const running = (async () => {
    for await (const batch of store.subscribeToAll({ after, signal, batchSize: 7 }))
      seen.push(...batch.events);
  })();
  return {
    async until(ids: Set<string>, timeoutMs = 30_000): Promise<RecordedEvent[]> {
      const deadline = Date.now() + timeoutMs;
      while ([...ids].some((id) => !seen.some((e) => e.id === id))) {
        if (Date.now() > deadline)
          throw new Error(`subscriber saw ${seen.length} events, not all ${ids.size} expected`);
        await sleep(20);
      }
      await sleep(100); // give a duplicate the chance to show up
      void running;
      return [...seen];
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
