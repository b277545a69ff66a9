import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import type { EventStore, ReadAllPage, RecordedEvent } from '../../src/eventstore/port.js';
import { sharedPages } from '../../src/eventstore/shared-pages.js';
import type { AppendNotice } from '../../src/eventstore/postgres/append-notice.js';
import { decodePgPosition, encodePgPosition } from '../../src/eventstore/postgres/position.js';
import { subscribeByPolling } from '../../src/eventstore/postgres/subscription.js';
import type { TestDatabase } from '../support/database.js';
import { eventStoreForEachTest, untilVisible } from '../support/event-store.js';
import { until } from '../support/edge-agent.js';

const TYPES = ['Read', 'Connected', 'Sited'] as const;

/** Appends events of the given types in one transaction and waits until readers see them. */
async function appendOf(store: EventStore, types: readonly string[]) {
  const events = types.map((type) => ({ id: randomUUID(), type, data: { tag: randomUUID() } }));
  const { position } = await store.append(`source-${randomUUID()}`, events, 'any');
  await untilVisible(store, position);
  return events.map((e) => e.id);
}

const ids = (events: readonly RecordedEvent[]) => events.map((e) => e.id);

/** Everything of `types` after `after`, read straight from the store in pages of 1,000. */
async function direct(store: EventStore, types: readonly string[], after?: string) {
  const all: RecordedEvent[] = [];
  for (let position = after; ;) {
    const page = await store.readAll({ after: position, maxCount: 1000, eventTypes: types });
    all.push(...page.events);
    position = page.lastPosition ?? position;
    if (page.atEnd) return all;
  }
}

/** A small deterministic generator, so a failing sequence can be run again from its seed. */
function randomOf(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s % n;
  };
}

describe('pages of the global order shared by readers of overlapping types', () => {
  // Only notifications wake an idle subscription within a test's time.
  const running = eventStoreForEachTest({ idlePollMs: 60_000 });
  let store: PostgresEventStore;
  let db: TestDatabase;
  beforeEach(() => ({ store, db } = running));

  it('serves a second reader at the same position from the first one’s read, each its own types', async () => {
    const appended = await appendOf(store, ['Read', 'Connected', 'Read', 'Sited', 'Read']);
    const readAll = sinon.spy(store, 'readAll');
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 1000 });

    const state = await pages.readAll({ maxCount: 100, eventTypes: ['Read', 'Connected'] });
    const telemetry = await pages.readAll({ maxCount: 100, eventTypes: ['Read', 'Sited'] });

    expect(readAll.callCount, 'one read of the store for both').to.equal(1);
    expect(readAll.firstCall.args[0].eventTypes).to.have.members([...TYPES]);
    expect(ids(state.events)).to.deep.equal([appended[0], appended[1], appended[2], appended[4]]);
    expect(ids(telemetry.events)).to.deep.equal([appended[0], appended[2], appended[3], appended[4]]);
    for (const page of [state, telemetry]) {
      expect(page.atEnd).to.equal(true);
      expect(page.lastPosition).to.equal((await direct(store, TYPES)).at(-1)!.position);
    }
    expect(pages.keptEvents, 'no reader joined: the page is kept with its five events').to.equal(5);
  });

  it('hands out the kept chain at once, and reads the store only where no one has read', async () => {
    const first = await appendOf(store, ['Read', 'Read']);
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 1000 });
    const early = await pages.readAll({ maxCount: 100, eventTypes: ['Read'] });
    expect(ids(early.events)).to.deep.equal(first);
    const later = await appendOf(store, ['Read', 'Connected']);

    const readAll = sinon.spy(store, 'readAll');
    // The kept page reached the head when it was read: it is the answer, without a read after it.
    const late = await pages.readAll({ maxCount: 100, eventTypes: ['Read', 'Connected'] });
    expect(ids(late.events)).to.deep.equal(first);
    expect(late.atEnd).to.equal(true);
    expect(late.lastPosition).to.equal(early.lastPosition);
    expect(readAll.callCount).to.equal(0);

    // Reading on from there reads the store, after the kept page only, and keeps that page in turn.
    const next = await pages.readAll({
      after: late.lastPosition,
      maxCount: 100,
      eventTypes: ['Read', 'Connected'],
    });
    expect(ids(next.events)).to.deep.equal(later);
    expect(readAll.callCount).to.equal(1);
    expect(readAll.firstCall.args[0].after).to.equal(early.lastPosition);
    const mine = await pages.readAll({ after: early.lastPosition, maxCount: 100, eventTypes: ['Read'] });
    expect(ids(mine.events)).to.deep.equal([later[0]]);
    expect(mine.lastPosition).to.equal(next.lastPosition);
    expect(readAll.callCount, 'the first reader had the second one’s page').to.equal(1);

    // A chain of several kept pages is handed out as one, up to the count asked for.
    const whole = await pages.readAll({ maxCount: 100, eventTypes: ['Read', 'Connected'] });
    expect(ids(whole.events)).to.deep.equal([...first, ...later]);
    expect(whole.lastPosition).to.equal(next.lastPosition);
    expect(readAll.callCount).to.equal(1);
  });

  it('lets a subscription handed an older kept page read on to an append it was told of', async () => {
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 1000 });
    await appendOf(store, ['Read']);
    const head = await pages.readAll({ maxCount: 100, eventTypes: ['Read'] });
    const told: ((notice: AppendNotice) => void)[] = [];
    const controller = new AbortController();
    const batches: RecordedEvent[][] = [];
    const subscription = subscribeByPolling(
      pages,
      { after: head.lastPosition, eventTypes: ['Read'], signal: controller.signal, batchSize: 100 },
      (wake) => {
        told.push(wake);
        // LISTEN never settles here, so only the notices below wake it.
        return { listening: new Promise<void>(() => undefined), stop: () => undefined };
      },
      60_000,
    );
    const following = (async () => {
      for await (const batch of subscription) if (batch.events.length > 0) batches.push([...batch.events]);
    })();
    try {
      // Another reader reads [head, second] and keeps it; then a third event is appended.
      const second = await appendOf(store, ['Read']);
      const kept = await pages.readAll({ after: head.lastPosition, maxCount: 100, eventTypes: ['Read'] });
      expect(ids(kept.events)).to.deep.equal(second);
      const third = await appendOf(store, ['Read']);
      const thirdPosition = (await direct(store, ['Read'])).at(-1)!.position;
      // Its notice, as the adapter parses it: the lowest position its transaction's events can have.
      const committedFrom = encodePgPosition(decodePgPosition(thirdPosition).transactionId, 0n);
      for (const wake of told) wake({ committedFrom, eventTypes: new Set(['Read']) });

      await until('the third event delivered', async () => batches.flat().length === 2 || undefined, 5000);
      expect(batches.map(ids), 'the kept page first, then a read of its own after it').to.deep.equal([
        second,
        third,
      ]);
    } finally {
      controller.abort();
      await following;
    }
  });

  it('never hands out more than maxCount events, cutting a longer kept page at the room left', async () => {
    await appendOf(
      store,
      Array.from({ length: 30 }, () => 'Read'),
    );
    const all = await direct(store, ['Read']);
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 1000 });
    const wide = await pages.readAll({ maxCount: 50, eventTypes: ['Read'] });
    expect(ids(wide.events)).to.deep.equal(ids(all));
    expect(wide.atEnd).to.equal(true);

    const readAll = sinon.spy(store, 'readAll');
    const narrow = await pages.readAll({ maxCount: 8, eventTypes: ['Read'] });
    expect(ids(narrow.events)).to.deep.equal(ids(all.slice(0, 8)));
    expect(narrow.lastPosition).to.equal(all[7]!.position);
    expect(narrow.atEnd).to.equal(false);
    expect(readAll.callCount, 'cut from the kept page').to.equal(0);
    const rest = await pages.readAll({ after: narrow.lastPosition, maxCount: 100, eventTypes: ['Read'] });
    expect(ids(rest.events)).to.deep.equal(ids(all.slice(8)));
  });

  it('keeps only pages that reached the head: a reader behind it reads on its own', async () => {
    await appendOf(
      store,
      Array.from({ length: 12 }, () => 'Read'),
    );
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 1000 });
    const readAll = sinon.spy(store, 'readAll');
    const full = await pages.readAll({ maxCount: 5, eventTypes: ['Read'] });
    expect(full.atEnd).to.equal(false);
    expect(pages.keptEvents).to.equal(0);
    const again = await pages.readAll({ maxCount: 5, eventTypes: ['Read'] });
    expect(ids(again.events)).to.deep.equal(ids(full.events));
    expect(readAll.callCount, 'read again').to.equal(2);

    // Two readers behind that ask at once still share the read under way.
    const [one, two] = await Promise.all([
      pages.readAll({ after: full.lastPosition, maxCount: 5, eventTypes: ['Read'] }),
      pages.readAll({ after: full.lastPosition, maxCount: 5, eventTypes: ['Read', 'Sited'] }),
    ]);
    expect(ids(two.events)).to.deep.equal(ids(one.events));
    expect(readAll.callCount).to.equal(3);
    expect(pages.keptEvents).to.equal(0);
  });

  it('keeps at most maxEvents, dropping the oldest pages, and then reads the store again', async () => {
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 25 });
    let after: string | undefined;
    for (let n = 0; n < 4; n++) {
      await appendOf(
        store,
        Array.from({ length: 10 }, () => 'Read'),
      );
      const page = await pages.readAll({ after, maxCount: 100, eventTypes: ['Read'] });
      expect(page.events).to.have.length(10);
      after = page.lastPosition;
      expect(pages.keptEvents).to.be.at.most(25);
    }
    expect(pages.keptEvents, 'the two newest pages of ten events').to.equal(20);
    const readAll = sinon.spy(store, 'readAll');
    const again = await pages.readAll({ maxCount: 100, eventTypes: ['Read'] });
    expect(readAll.callCount, 'the first page was dropped').to.equal(1);
    expect(again.events).to.have.length(40);
  });

  it('drops a page once every reader that joined has walked past it', async () => {
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 1000 });
    const leaveState = pages.join();
    const leaveTelemetry = pages.join();
    await appendOf(
      store,
      Array.from({ length: 5 }, () => 'Read'),
    );
    const readAll = sinon.spy(store, 'readAll');

    const first = await pages.readAll({ maxCount: 100, eventTypes: ['Read'] });
    expect(pages.keptEvents, 'one of two readers passed').to.equal(5);
    const again = await pages.readAll({ maxCount: 100, eventTypes: ['Read', 'Sited'] });
    expect(ids(again.events)).to.deep.equal(ids(first.events));
    expect(readAll.callCount).to.equal(1);
    expect(pages.keptEvents, 'both passed: nothing is kept for anyone').to.equal(0);

    // A reader that leaves is no longer waited for.
    leaveTelemetry();
    leaveTelemetry();
    await appendOf(
      store,
      Array.from({ length: 5 }, () => 'Read'),
    );
    await pages.readAll({ after: first.lastPosition, maxCount: 100, eventTypes: ['Read'] });
    expect(pages.keptEvents).to.equal(0);
    leaveState();
    await pages.readAll({ after: first.lastPosition, maxCount: 100, eventTypes: ['Read'] });
    expect(pages.keptEvents, 'no one joined: kept until the bound').to.equal(5);
  });

  it('does not keep a failed read: those who joined it see the failure, the next reader reads again', async () => {
    const appended = await appendOf(store, ['Read']);
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 1000 });
    const fault = new Error('connection lost');
    const readAll = sinon.stub(store, 'readAll').callThrough();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    readAll.onFirstCall().callsFake(async () => {
      await held;
      throw fault;
    });

    const one = pages.readAll({ maxCount: 10, eventTypes: ['Read'] });
    const two = pages.readAll({ maxCount: 10, eventTypes: ['Read', 'Connected'] });
    release();
    const outcomes = await Promise.allSettled([one, two]);
    expect(readAll.callCount, 'the second reader joined the first one’s read').to.equal(1);
    expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
    expect(outcomes.map((o) => (o as PromiseRejectedResult).reason)).to.deep.equal([fault, fault]);
    expect(pages.keptEvents).to.equal(0);

    const retried = await pages.readAll({ maxCount: 10, eventTypes: ['Read'] });
    expect(readAll.callCount).to.equal(2);
    expect(ids(retried.events)).to.deep.equal(appended);
  });

  it('gives every reader exactly what a read of its own gives, over random appends and interleavings', async () => {
    const random = randomOf(20261206);
    const pages = sharedPages(store, { eventTypes: TYPES, maxEvents: 60 });
    const readers = [['Read', 'Connected'], ['Read', 'Sited'], ['Read'], ['Connected', 'Sited']].map(
      (eventTypes) => ({ eventTypes, after: undefined as string | undefined, seen: [] as RecordedEvent[] }),
    );
    // Joined, so pages also go as soon as all four have passed them.
    readers.forEach(() => pages.join());
    const readAll = sinon.spy(store, 'readAll');
    let served = 0;
    for (let step = 0; step < 120; step++) {
      if (random(3) === 0) {
        await appendOf(
          store,
          Array.from({ length: 1 + random(12) }, () => TYPES[random(TYPES.length)]!),
        );
      }
      // Readers read at once as often as one after another: joined reads, kept pages and fresh ones.
      const chosen = readers.filter(() => random(2) === 0);
      const results: ReadAllPage[] = await Promise.all(
        chosen.map((r) =>
          pages.readAll({ after: r.after, maxCount: 5 + random(20), eventTypes: r.eventTypes }),
        ),
      );
      chosen.forEach((reader, n) => {
        const page = results[n]!;
        reader.seen.push(...page.events);
        if (page.lastPosition !== undefined) {
          if (reader.after !== undefined)
            expect(store.comparePositions(page.lastPosition, reader.after)).to.be.above(0);
          reader.after = page.lastPosition;
        }
        served++;
      });
    }
    // Then each reads to the end.
    for (const reader of readers) {
      for (;;) {
        const page = await pages.readAll({
          after: reader.after,
          maxCount: 25,
          eventTypes: reader.eventTypes,
        });
        reader.seen.push(...page.events);
        reader.after = page.lastPosition ?? reader.after;
        served++;
        if (page.atEnd) break;
      }
      expect(ids(reader.seen), reader.eventTypes.join('+')).to.deep.equal(
        ids(await direct(store, reader.eventTypes)),
      );
    }
    expect(pages.keptEvents).to.be.at.most(60);
    // Sharing happened: fewer reads of the store than readers' reads.
    const storeReadsWhileShared = readAll.getCalls().filter((c) => c.args[0].maxCount !== 1000).length;
    expect(storeReadsWhileShared).to.be.below(served);
    expect(storeReadsWhileShared).to.be.above(0);
  });

  it('lets the adapter’s subscriptions within the shared types read one chain, each delivered in full', async () => {
    const shared = new PostgresEventStore(db.pool, {
      connectionString: db.url,
      idlePollMs: 60_000,
      sharedReads: { eventTypes: TYPES, maxEvents: 1000 },
    });
    const controller = new AbortController();
    const readAll = sinon.spy(shared, 'readAll');
    try {
      const follow = (eventTypes: string[]) => {
        const seen: RecordedEvent[] = [];
        const done = (async () => {
          for await (const batch of shared.subscribeToAll({
            eventTypes,
            signal: controller.signal,
            batchSize: 50,
          })) {
            seen.push(...batch.events);
          }
        })();
        return { eventTypes, seen, done };
      };
      const followers = [follow(['Read', 'Connected']), follow(['Read', 'Sited'])];
      // A reader of a type outside the shared ones reads on its own.
      const outsider = follow(['Other']);
      for (let n = 0; n < 10; n++) {
        await appendOf(shared, ['Read', 'Connected', 'Sited', 'Other', 'Read']);
      }
      const expected = await Promise.all(followers.map((f) => direct(store, f.eventTypes)));
      await until(
        'every follower has every event of its types',
        async () => followers.every((f, n) => f.seen.length === expected[n]!.length) || undefined,
        10_000,
      );
      followers.forEach((f, n) => expect(ids(f.seen)).to.deep.equal(ids(expected[n]!)));
      await until(
        'the outsider has its events',
        async () => outsider.seen.length === 10 || undefined,
        10_000,
      );
      const throughOwnRead = readAll.getCalls().filter((c) => c.args[0].eventTypes?.includes('Other'));
      expect(throughOwnRead.length, 'the outsider read the store with its own types').to.be.above(0);
      const sharedReads = readAll
        .getCalls()
        .filter(
          (c) => c.args[0].eventTypes?.length === TYPES.length && !c.args[0].eventTypes.includes('Other'),
        );
      expect(sharedReads.length, 'the followers read the store with all the shared types').to.be.above(0);
      expect(
        readAll.getCalls().some((c) => c.args[0].eventTypes?.join() === 'Read,Connected'),
        'never with a follower’s own types',
      ).to.equal(false);
      controller.abort();
      await Promise.all([...followers, outsider].map((f) => f.done));
    } finally {
      controller.abort();
      await shared.close();
    }
  });
});
