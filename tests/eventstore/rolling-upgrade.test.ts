import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { expect } from 'chai';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { createPool, type Pool } from '../../src/infra/postgres/pool.js';
import {
  OLD_APPEND_BATCH,
  OLD_APPEND_EVENTS,
  OLD_READ_ALL,
} from '../fixtures/eventstore-before-function-files/statements.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { migrateAsBeforeFunctionFiles } from './function-definitions.js';

interface OldAppend {
  readonly startedAt: number;
  readonly endedAt: number;
}

/**
 * A node of the version before, appending in a loop with its own statements until told to stop: a batch
 * over two streams (one shared by every writer) and a one-stream append at its exact expected revision.
 */
function oldNodeWriter(pool: Pool, writer: number, stop: () => boolean) {
  const ids: string[] = [];
  const appends: OldAppend[] = [];
  let revision = -1;
  let failure: unknown;
  const done = (async () => {
    while (!stop()) {
      const startedAt = performance.now();
      const batch = [randomUUID(), randomUUID()];
      const { rows } = await pool.query<{ inserted: boolean }>({
        ...OLD_APPEND_BATCH,
        values: [
          ['readings-old', `readings-old-${writer}`],
          batch,
          ['ReadingsRecorded', 'ReadingsRecorded'],
          [`{"writer":${writer},"n":${appends.length}}`, '{}'],
          [null, '{"node":"old"}'],
        ],
      });
      expect(rows.map((r) => r.inserted)).to.deep.equal([true, true]);
      const single = randomUUID();
      await pool.query(OLD_APPEND_EVENTS, [
        `device-old-${writer}`,
        revision,
        [single],
        ['DeviceRenamed'],
        [`{"n":${appends.length}}`],
        [null],
      ]);
      revision += 1;
      ids.push(...batch, single);
      appends.push({ startedAt, endedAt: performance.now() });
    }
  })().catch((error: unknown) => {
    failure = error;
  });
  return { ids, appends, done, failure: () => failure };
}

/** Waits for the condition, failing at once if a writer of the old node failed. */
async function until(
  writers: readonly { failure: () => unknown }[],
  condition: () => boolean,
  what: string,
): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    const failed = writers.find((w) => w.failure() !== undefined);
    if (failed) throw failed.failure();
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe('a rolling upgrade: the version before keeps appending while this one migrates', () => {
  let db: TestDatabase;
  let oldNode: Pool | undefined;
  let store: PostgresEventStore | undefined;
  afterEach(async () => {
    await store?.close();
    await oldNode?.end();
    store = undefined;
    oldNode = undefined;
    await db.drop();
  });

  it('loses no event of either version, stores each once, and both read them back in one order', async () => {
    db = await freshDatabase({ migrated: false });
    await migrateAsBeforeFunctionFiles(db.pool);
    oldNode = createPool(db.url, { max: 2, applicationName: 'device-cloud-old-node' });
    let stopping = false;
    const writers = [0, 1].map((writer) => oldNodeWriter(oldNode!, writer, () => stopping));
    const appendsSoFar = () => writers.reduce((n, w) => n + w.appends.length, 0);
    try {
      await until(writers, () => appendsSoFar() >= 20, 'the old node to append');

      const migrateStart = performance.now();
      const report = await migrate(db.pool, EVENT_STORE_FUNCTIONS);
      const migrateEnd = performance.now();
      expect(report.applied, 'the store was at the version before').to.deep.equal([]);

      // The new version's node starts once its migrate is done, and appends beside the old one.
      store = new PostgresEventStore(db.pool, { connectionString: db.url });
      const newIds: string[] = [];
      for (let n = 0; n < 20; n++) {
        const batch = [randomUUID(), randomUUID()];
        await store.appendBatch(
          batch.map((id, i) => ({
            streamName: i === 0 ? 'readings-old' : 'readings-new',
            event: { id, type: 'ReadingsRecorded', data: { node: 'new', n } },
          })),
        );
        const single = randomUUID();
        await store.append(
          'device-new',
          [{ id: single, type: 'DeviceRenamed', data: { n } }],
          n === 0 ? 'no_stream' : BigInt(n - 1),
        );
        newIds.push(...batch, single);
      }
      const afterMigrate = () =>
        writers.reduce((n, w) => n + w.appends.filter((a) => a.startedAt > migrateEnd).length, 0);
      await until(writers, () => afterMigrate() >= 20, 'the old node to append after the migrate');
      stopping = true;
      await Promise.all(writers.map((w) => w.done));
      expect(writers.map((w) => w.failure())).to.deep.equal([undefined, undefined]);

      const appends = writers.flatMap((w) => w.appends);
      const before = appends.filter((a) => a.endedAt < migrateStart).length;
      const during = appends.filter((a) => a.startedAt < migrateEnd && a.endedAt > migrateStart).length;
      const after = appends.filter((a) => a.startedAt > migrateEnd).length;
      const timeline = `old appends before/during/after the migrate: ${before}/${during}/${after}`;
      expect(before, timeline).to.be.at.least(20);
      expect(during, `${timeline}: none was in flight while it ran`).to.be.at.least(1);
      expect(after, timeline).to.be.at.least(20);

      const oldIds = writers.flatMap((w) => w.ids);
      const expected = new Set([...oldIds, ...newIds]);
      expect(expected.size).to.equal(oldIds.length + newIds.length);
      const { rows: stored } = await db.pool.query<{ event_id: string }>(
        `SELECT e.event_id::text FROM eventstore.events e ORDER BY e.transaction_id, e.global_position`,
      );
      expect(stored.length, 'each event stored once').to.equal(expected.size);
      expect(new Set(stored.map((r) => r.event_id))).to.deep.equal(expected);
      const { rows: gaps } = await db.pool.query(
        `SELECT stream_name FROM eventstore.events GROUP BY stream_name
          HAVING min(stream_revision) <> 0 OR max(stream_revision) <> count(*) - 1`,
      );
      expect(gaps, 'every stream numbered without gaps').to.deep.equal([]);

      // Read in global order by this version, and by the old node with its own statement.
      const readByNew: string[] = [];
      for (let after: string | undefined, atEnd = false; !atEnd;) {
        const page = await store.readAll({ after, maxCount: 100 });
        readByNew.push(...page.events.map((e) => e.id));
        ({ atEnd } = page);
        after = page.lastPosition;
      }
      expect(readByNew).to.deep.equal(stored.map((r) => r.event_id));
      const readByOld: string[] = [];
      for (let tx = '0', pos = '0', more = true; more;) {
        const { rows } = await oldNode.query<{
          is_head: boolean;
          event_id: string;
          transaction_id: string;
          global_position: string;
        }>({ ...OLD_READ_ALL, values: [tx, pos, 100] });
        const events = rows.filter((r) => !r.is_head);
        readByOld.push(...events.map((r) => r.event_id));
        more = events.length === 100;
        if (more) ({ transaction_id: tx, global_position: pos } = events.at(-1)!);
      }
      expect(readByOld).to.deep.equal(readByNew);
    } finally {
      stopping = true;
      await Promise.all(writers.map((w) => w.done));
    }
  });
});
