import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.js';
import { pageReader } from '../../src/eventstore/read-ahead.js';
import { replayPages } from '../../src/projections/replay.js';
import { eventStoreForEachTest, untilVisible } from '../support/event-store.js';
import { tallyProjector } from '../fixtures/tally-projector.js';
import { until } from '../support/edge-agent.js';

/** Appends `count` ticks in one transaction and waits until readers see them (these tests are about pages). */
async function appendTicks(store: EventStore, count: number) {
  const events = Array.from({ length: count }, (_, n) => ({ id: randomUUID(), type: 'Ticked', data: { n } }));
  const { position } = await store.append(`clock-${randomUUID()}`, events, 'any');
  await untilVisible(store, position);
}

const ticks = (events: readonly RecordedEvent[]) => events.map((e) => (e.data as { n: number }).n);

describe('reading pages of the global order one ahead', () => {
  // Only notifications wake an idle subscription within a test's time.
  const running = eventStoreForEachTest({ idlePollMs: 60_000 });
  let store: PostgresEventStore;
  beforeEach(() => ({ store } = running));

  it('starts the next read at once and hands its page over only for the position it was read from', async () => {
    await appendTicks(store, 25);
    const readAll = sinon.spy(store, 'readAll');
    const pages = pageReader(store, { maxCount: 10, eventTypes: ['Ticked'] });

    const first = await pages.read(undefined);
    pages.readAhead(first.lastPosition);
    expect(readAll.callCount, 'the read ahead began before anyone asked for its page').to.equal(2);
    const second = await pages.read(first.lastPosition);
    expect(readAll.callCount, 'the page read ahead was used, not read again').to.equal(2);
    expect(ticks(second.events)).to.deep.equal([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);

    // Asked for another position (a checkpoint someone else moved): the page read ahead is dropped.
    pages.readAhead(second.lastPosition);
    const again = await pages.read(first.lastPosition);
    expect(readAll.callCount).to.equal(4);
    expect(ticks(again.events)).to.deep.equal(ticks(second.events));
    expect(readAll.lastCall.args[0].after).to.equal(first.lastPosition);
  });

  it('prepares a page read ahead as soon as it arrives and hands the result over with it', async () => {
    await appendTicks(store, 25);
    const prepare = sinon.spy((events: readonly RecordedEvent[]) => ({ first: ticks(events)[0] }));
    const pages = pageReader(store, { maxCount: 10, eventTypes: ['Ticked'] }, { prepare });

    const first = await pages.read(undefined);
    expect(first.prepared, 'a page read when asked for is not prepared: nothing to overlap').to.equal(
      undefined,
    );
    pages.readAhead(first.lastPosition);
    // Before anyone asks for the page: its preparation overlaps the caller's work on the one before.
    await until('the page read ahead is prepared', async () => prepare.called || undefined, 5000);
    const second = await pages.read(first.lastPosition);
    expect(prepare.callCount).to.equal(1);
    expect(prepare.firstCall.args[0]).to.equal(second.events);
    expect(second.prepared).to.deep.equal({ first: 10 });

    // A preparation that fails leaves the page without: its consumer does the work itself.
    const failing = pageReader(
      store,
      { maxCount: 10, eventTypes: ['Ticked'] },
      {
        prepare: () => {
          throw new Error('cannot prepare');
        },
      },
    );
    failing.readAhead(second.lastPosition);
    const third = await failing.read(second.lastPosition);
    expect(ticks(third.events)).to.deep.equal([20, 21, 22, 23, 24]);
    expect(third.prepared).to.equal(undefined);
  });

  it('reports a failed read ahead only to a caller that uses its page', async () => {
    await appendTicks(store, 5);
    const fault = new Error('connection lost while reading ahead');
    const readAll = store.readAll.bind(store);
    sinon
      .stub(store, 'readAll')
      .callsFake((options) => (options.after ? Promise.reject(fault) : readAll(options)));
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const pages = pageReader(store, { maxCount: 2 });
      const first = await pages.read(undefined);
      pages.readAhead(first.lastPosition);
      // Dropped: the caller starts over from the beginning instead.
      expect(ticks((await pages.read(undefined)).events)).to.deep.equal([0, 1]);
      pages.readAhead(first.lastPosition);
      let failure: unknown;
      await pages.read(first.lastPosition).catch((e: unknown) => (failure = e));
      expect(failure).to.equal(fault);
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled, 'no rejection went unhandled').to.deep.equal([]);
  });

  it('replays with the next page on its way while the current one is applied, in order, each event once', async () => {
    await appendTicks(store, 35);
    const readAll = sinon.spy(store, 'readAll');
    const readsWhenApplied: number[] = [];
    const applied: number[] = [];
    const result = await replayPages(store, tallyProjector(['Ticked']), undefined, 10, async (events) => {
      readsWhenApplied.push(readAll.callCount);
      applied.push(...ticks(events));
    });
    expect(applied).to.deep.equal(Array.from({ length: 35 }, (_, n) => n));
    expect(result.applied).to.equal(35);
    // Pages 1-3 were behind the end, so each one's successor was being read while it was applied.
    expect(readsWhenApplied).to.deep.equal([2, 3, 4, 4]);
  });

  it('a subscription behind the head reads its next page while the consumer handles this one', async function () {
    this.timeout(20_000);
    await appendTicks(store, 30);
    const readAll = sinon.spy(store, 'readAll');
    const controller = new AbortController();
    const seen: number[] = [];
    let readsDuringFirstBatch = 0;
    for await (const batch of store.subscribeToAll({
      eventTypes: ['Ticked'],
      batchSize: 10,
      signal: controller.signal,
    })) {
      if (seen.length === 0) {
        // The consumer holds its first batch until the next page's read has begun (bounded).
        const deadline = Date.now() + 10_000;
        while (readAll.callCount < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
        readsDuringFirstBatch = readAll.callCount;
      }
      seen.push(...ticks(batch.events));
      if (batch.caughtUp) controller.abort();
    }
    expect(readsDuringFirstBatch, 'the second page was read while the first was held').to.equal(2);
    expect(seen).to.deep.equal(Array.from({ length: 30 }, (_, n) => n));
  });
});
