import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type pg from 'pg';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { encodePgPosition } from '../../src/eventstore/postgres/position.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, eventStoreForEachTest, openEventStore } from '../support/event-store.js';
import { eventStoreContract, sleep } from './contract.js';

/** Appends one event per transaction, each transaction held open for a random while after it wrote. */
async function slowTransactions(pool: pg.Pool, transactions: number, eventsEach: number): Promise<string[]> {
  const ids: string[] = [];
  await Promise.all(
    Array.from({ length: transactions }, async () => {
      const batch = Array.from({ length: eventsEach }, () => randomUUID());
      ids.push(...batch);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query(
          `SELECT eventstore.append_events($1, -2, $2::uuid[], $3::text[], $4::json[], $5::json[])`,
          [
            `burst-${randomUUID()}`,
            batch,
            batch.map(() => 'Burst'),
            batch.map(() => '{}'),
            batch.map(() => null),
          ],
        );
        await sleep(Math.random() * 60);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    }),
  );
  return ids;
}

describe('event store contract: PostgreSQL adapter', () => {
  eventStoreContract(async () => {
    const { db, store } = await openEventStore({ idlePollMs: 50 });
    return {
      store,
      globalEventIdUniqueness: true,
      burst: (n, each) => slowTransactions(db.pool, n, each),
      async close() {
        await closeEventStore({ db, store });
      },
    };
  });
});

/**
 * The counter-example the ordering case guards against: a reader that pages by a bigserial position
 * alone. A transaction that took a lower position but commits later is skipped for ever.
 */
async function naiveBigserialRead(pool: pg.Pool, after: bigint): Promise<{ id: string; gp: bigint }[]> {
  const { rows } = await pool.query<{ event_id: string; global_position: string }>(
    'SELECT event_id, global_position FROM eventstore.events WHERE global_position > $1 ORDER BY global_position',
    [String(after)],
  );
  return rows.map((r) => ({ id: r.event_id, gp: BigInt(r.global_position) }));
}

describe('global order under out-of-order commits (PostgreSQL)', () => {
  const suite = eventStoreForEachTest({ idlePollMs: 50 });

  it('a naive bigserial reader skips an event committed out of order; our reader does not', async () => {
    const slow = await suite.db.pool.connect();
    const earlyId = randomUUID();
    await slow.query('BEGIN');
    await slow.query(
      `SELECT eventstore.append_events('slow', -2, $1::uuid[], '{Slow}', '{"{}"}', '{NULL}')`,
      [[earlyId]],
    );
    const fast = await suite.store.append('fast', [{ id: randomUUID(), type: 'Fast', data: {} }], 'any');

    const naiveSeen = await naiveBigserialRead(suite.db.pool, 0n);
    const naiveCheckpoint = naiveSeen.at(-1)!.gp;
    const ours = await suite.store.readAll({ maxCount: 100 });
    expect(ours.events, 'ours waits for the open transaction').to.have.length(0);

    await slow.query('COMMIT');
    slow.release();

    const naiveAfter = await naiveBigserialRead(suite.db.pool, naiveCheckpoint);
    const naiveTotal = [...naiveSeen, ...naiveAfter].map((e) => e.id);
    expect(naiveTotal, 'the naive reader never sees the early event').to.not.include(earlyId);

    const oursAfter = await suite.store.readAll({ maxCount: 100 });
    expect(oursAfter.events.map((e) => e.type)).to.deep.equal(['Slow', 'Fast']);
    expect(oursAfter.events[1]!.position).to.equal(fast.position);
  });

  it('a naive reader polling during a random burst misses events that ours delivers', async function () {
    this.timeout(60_000);
    const naive: string[] = [];
    let last = 0n;
    let polling = true;
    const poller = (async () => {
      while (polling) {
        for (const row of await naiveBigserialRead(suite.db.pool, last)) {
          naive.push(row.id);
          last = row.gp;
        }
        await sleep(2);
      }
    })();
    const ids = await slowTransactions(suite.db.pool, 40, 3);
    polling = false;
    await poller;
    const ours = (await suite.store.readAll({ maxCount: 10_000 })).events.map((e) => e.id);
    expect(ours).to.have.members(ids);
    expect(naive.length, 'naive reader missed events').to.be.lessThan(ids.length);
  });

  it('appendMany writes all streams or none', async () => {
    await suite.store.append('taken', [{ id: randomUUID(), type: 'A', data: {} }], 'no_stream');
    let failed = false;
    try {
      await suite.store.appendMany([
        {
          streamName: 'fresh',
          events: [{ id: randomUUID(), type: 'A', data: {} }],
          expectedRevision: 'no_stream',
        },
        {
          streamName: 'taken',
          events: [{ id: randomUUID(), type: 'B', data: {} }],
          expectedRevision: 'no_stream',
        },
      ]);
    } catch {
      failed = true;
    }
    expect(failed).to.equal(true);
    expect(await suite.store.readStream('fresh')).to.deep.equal([]);
  });
});

describe('page reads of the PostgreSQL event store', () => {
  // What a projector's catch-up reads: pages of 10,000 events, each carrying a readings message's worth of data.
  const PAGE = 10_000;
  const PAYLOAD = 'r'.repeat(600);

  /** Temporary blocks a page function wrote, and the page's rows and bytes, from the database's own account. */
  async function pageRead(
    db: TestDatabase,
    call: string,
  ): Promise<{ rows: number; bytes: number; tempWritten: number }> {
    const { rows } = await db.pool.query<{ 'QUERY PLAN': [{ Plan: Record<string, number> }] }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM ${call}`,
    );
    const plan = rows[0]!['QUERY PLAN'][0].Plan;
    const size = await db.pool.query<{ bytes: string }>(
      `SELECT sum(pg_column_size(p.*))::text AS bytes FROM ${call} p`,
    );
    return {
      rows: plan['Actual Rows']!,
      bytes: Number(size.rows[0]!.bytes),
      tempWritten: plan['Temp Written Blocks']!,
    };
  }

  it('sorts a full page in memory: no temporary file for the two sorts of a page of 10,000 events', async () => {
    const { db, store } = await openEventStore();
    try {
      await sortsInMemory(db, store);
    } finally {
      await closeEventStore({ db, store });
    }
  });

  async function sortsInMemory(db: TestDatabase, store: PostgresEventStore) {
    for (let start = 0; start < PAGE; start += 2_000) {
      await store.appendBatch(
        Array.from({ length: 2_000 }, (_, n) => ({
          streamName: `device-${(start + n) % 100}`,
          event: {
            id: randomUUID(),
            type: n % 2 === 0 ? 'Even' : 'Odd',
            data: { n: start + n, payload: PAYLOAD },
          },
        })),
      );
    }
    for (const call of [
      `eventstore.read_all_page('0'::xid8, 0, ${PAGE})`,
      `eventstore.read_types_page('0'::xid8, 0, ${PAGE}, ARRAY['Even', 'Odd'])`,
    ]) {
      const read = await pageRead(db, call);
      // The page is whole and larger than PostgreSQL's default work_mem (4 MB), which used to spill.
      expect(read.rows, call).to.equal(PAGE + 1);
      expect(read.bytes, call).to.be.greaterThan(4 * 1024 * 1024);
      expect(read.tempWritten, call).to.equal(0);
    }
  }
});

describe('positions and times as PostgreSQL readers return them', () => {
  it('encodes a position as BigInt would, across the 15-digit fast path, 2^53 and 64 bits, in any order', () => {
    const reference = (t: bigint, g: bigint) =>
      t.toString(16).padStart(16, '0') + g.toString(16).padStart(16, '0');
    const values = [
      0n,
      1n,
      255n,
      999_999_999_999_999n,
      1_000_000_000_000_000n,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 53n + 1n,
      2n ** 63n - 1n,
      2n ** 64n - 1n,
    ];
    // Pairs in an order that repeats and changes the transaction, as pages do, and alternates bigint and text.
    for (const [i, t] of [...values, ...values.slice().reverse(), ...values].entries()) {
      for (const g of values) {
        const expected = reference(t, g);
        expect(encodePgPosition(String(t), String(g)), `${t} ${g}`).to.equal(expected);
        expect(encodePgPosition(i % 2 === 0 ? t : String(t), g), `${t} ${g}`).to.equal(expected);
      }
    }
    // Text that is not an integer's digits is refused, as BigInt refuses it, not written as some number.
    for (const text of ['1e3', '1.5', 'abc', '12a']) {
      expect(() => encodePgPosition(text, '0'), text).to.throw();
    }
  });

  it('gives each event its recording time cut to the millisecond, on every read path', async () => {
    const { db, store } = await openEventStore();
    try {
      const stream = `timed-${randomUUID()}`;
      await store.append(
        stream,
        ['a', 'b', 'c', 'd'].map((n) => ({ id: randomUUID(), type: 'Timed', data: { n } })),
        'any',
      );
      // Microseconds just under the next millisecond, where rounding and cutting differ; and before 1970.
      const times = [
        '2026-11-28 01:23:45.123999+00',
        '2026-11-28 01:23:45.999999+00',
        '1969-12-31 23:59:59.999500+00',
        '2026-11-28 01:23:45+00',
      ];
      await db.pool.query(
        `UPDATE eventstore.events e SET recorded_at = t.at
           FROM unnest($2::int[], $3::timestamptz[]) AS t(revision, at)
          WHERE e.stream_name = $1 AND e.stream_revision = t.revision`,
        [stream, [0, 1, 2, 3], times],
      );
      const expected = [
        '2026-11-28T01:23:45.123Z',
        '2026-11-28T01:23:45.999Z',
        '1969-12-31T23:59:59.999Z',
        '2026-11-28T01:23:45.000Z',
      ];
      const fromStream = await store.readStream(stream);
      expect(fromStream.map((e) => e.recordedAt.toISOString())).to.deep.equal(expected);
      const fromAll = (await store.readAll({ maxCount: 100 })).events.filter((e) => e.streamName === stream);
      expect(fromAll.map((e) => e.recordedAt.toISOString())).to.deep.equal(expected);
      const ofType = (await store.readAll({ maxCount: 100, eventTypes: ['Timed'] })).events;
      expect(ofType.map((e) => e.recordedAt.toISOString())).to.deep.equal(expected);
      // pg's own parser of the column, which readers used before, agrees.
      const { rows } = await db.pool.query<{ recorded_at: Date }>(
        `SELECT recorded_at FROM eventstore.events WHERE stream_name = $1 ORDER BY stream_revision`,
        [stream],
      );
      expect(rows.map((r) => r.recorded_at.toISOString())).to.deep.equal(expected);
    } finally {
      await closeEventStore({ db, store });
    }
  });
});

describe('retention horizons of the PostgreSQL event store', () => {
  let running: { db: TestDatabase; store: PostgresEventStore };
  beforeEach(async () => {
    running = await openEventStore();
  });
  afterEach(() => closeEventStore(running));

  it('takes the newest horizon of several types by transaction id as a number, not as text', async () => {
    // Two types deleted up to transactions 998 and 1015: as text, "998" sorts after "1015".
    await running.db.pool.query(
      `INSERT INTO eventstore.retention_horizons (event_type, transaction_id, global_position, recorded_before)
       VALUES ('Older', '998', 40, '2026-11-01T00:00:00Z'), ('Newer', '1015', 7, '2026-11-02T00:00:00Z')`,
    );
    const point = await running.store.retention(['Older', 'Newer']);
    expect(point?.horizon).to.equal(encodePgPosition('1015', '7'));
    expect(point?.recordedBefore.toISOString()).to.equal('2026-11-02T00:00:00.000Z');
    expect(await running.store.retentionHorizon(['Older'])).to.equal(encodePgPosition('998', '40'));
  });
});
