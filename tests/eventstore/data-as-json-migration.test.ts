import { readdir, readFile } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { createPool } from '../../src/infra/postgres/pool.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

const MIGRATIONS = new URL('../../src/infra/postgres/migrations/', import.meta.url);
const DATA_AS_JSON = '0404_event_store_data_as_json.sql';
/** The event store's functions and triggers as a database of then held them (jsonb data). */
const DEFINITIONS_BEFORE = new URL(
  '../fixtures/eventstore-before-function-files/definitions-before-0404.sql',
  import.meta.url,
);

/**
 * Leaves the store as a deployment of the version before 0404 left it: the migrations before it as
 * migrate() applies them, then the functions and triggers in force then, which those migrations defined
 * themselves before the definitions moved to src/eventstore/postgres/functions.
 */
async function migrateUpTo(db: TestDatabase, last: string): Promise<void> {
  const files = (await readdir(MIGRATIONS)).filter((f) => /^\d{4}_.+\.sql$/.test(f) && f < last).sort();
  await db.pool.query(
    `CREATE TABLE public.schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  for (const file of files) {
    await db.pool.query(await readFile(new URL(file, MIGRATIONS), 'utf8'));
    await db.pool.query('INSERT INTO public.schema_migrations (name) VALUES ($1)', [file]);
  }
  await db.pool.query(await readFile(DEFINITIONS_BEFORE, 'utf8'));
}

const columnTypes = async (db: TestDatabase) =>
  (
    await db.pool.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns
        WHERE table_schema = 'eventstore' AND table_name = 'events' AND column_name IN ('data', 'metadata')
        ORDER BY column_name`,
    )
  ).rows.map((r) => `${r.column_name} ${r.data_type}`);

describe('migration 0404: event data and metadata stored as json', () => {
  let db: TestDatabase;
  let store: PostgresEventStore | undefined;
  beforeEach(async () => {
    db = await freshDatabase({ migrated: false });
  });
  afterEach(async () => {
    await store?.close();
    store = undefined;
    await db.drop();
  });

  it('keeps every stored event, its position and its metadata, and appends and reads as before after it', async () => {
    await migrateUpTo(db, DATA_AS_JSON);
    expect(await columnTypes(db), 'the store before it').to.deep.equal(['data jsonb', 'metadata jsonb']);
    // Written through the functions of then: one stream with an expected revision, a batch over two streams.
    const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
    await db.pool.query(
      `SELECT * FROM eventstore.append_events($1, -1, $2::uuid[], $3::text[], $4::jsonb[], $5::jsonb[])`,
      ['device-dev_a', [first], ['DeviceRegistered'], ['{"deviceId":"dev_a","n":[1,2.5,null]}'], [null]],
    );
    await db.pool.query(
      `SELECT * FROM eventstore.append_batch($1::text[], $2::uuid[], $3::text[], $4::jsonb[], $5::jsonb[])`,
      [
        ['readings-dev_a', 'readings-dev_b'],
        [second, third],
        ['ReadingsRecorded', 'ReadingsRecorded'],
        ['{"deviceId":"dev_a","text":"naïve \\"quoted\\""}', '{"deviceId":"dev_b"}'],
        ['{"correlationId":"c-1"}', null],
      ],
    );
    // Read as a node of then read it, on its own connections; the upgrade stops such nodes first
    // (docs/deployment.md, "Upgrading"): a statement it prepared would now give another result type.
    const oldNode = createPool(db.url, { max: 2 });
    const oldStore = new PostgresEventStore(oldNode, { connectionString: db.url });
    const before = await oldStore.readAll({ maxCount: 10 });
    await oldStore.close();
    await oldNode.end();
    expect(before.events.map((e) => e.id)).to.deep.equal([first, second, third]);

    const report = await migrate(db.pool, EVENT_STORE_FUNCTIONS);
    store = new PostgresEventStore(db.pool, { connectionString: db.url });

    expect(report.applied[0], 'the migration after 0403').to.equal(DATA_AS_JSON);
    expect(await columnTypes(db)).to.deep.equal(['data json', 'metadata json']);
    const { rows: settings } = await db.pool.query<{ name: string; config: string[] }>(
      `SELECT proname AS name, proconfig AS config FROM pg_proc
        WHERE pronamespace = 'eventstore'::regnamespace AND proname IN ('read_all_page', 'read_types_page')
        ORDER BY proname`,
    );
    expect(settings, 'the page functions keep their plan and sort settings').to.deep.equal([
      { name: 'read_all_page', config: ['enable_bitmapscan=off', 'work_mem=64MB'] },
      { name: 'read_types_page', config: ['enable_bitmapscan=off', 'work_mem=64MB'] },
    ]);
    const after = await store.readAll({ maxCount: 10 });
    expect(after.events).to.deep.equal(before.events);
    expect(after.events[1]!.data).to.deep.equal({ deviceId: 'dev_a', text: 'naïve "quoted"' });
    expect(after.events[1]!.metadata).to.deep.equal({ correlationId: 'c-1' });

    // Every append path works on the new columns, and an event reads back as written, keys in its order.
    await store.append(
      'device-dev_a',
      [{ id: randomUUID(), type: 'DeviceRenamed', data: { zeta: 1, alpha: { y: true, b: 'x' } } }],
      0n,
    );
    await store.appendBatch([
      {
        streamName: 'readings-dev_b',
        event: { id: randomUUID(), type: 'ReadingsRecorded', data: { b: 2, a: 1 } },
      },
    ]);
    const stream = await store.readStream('device-dev_a');
    expect(stream.map((e) => e.revision)).to.deep.equal([0n, 1n]);
    const renamed = stream[1]!.data as Record<string, unknown>;
    expect(Object.keys(renamed)).to.deep.equal(['zeta', 'alpha']);
    const { rows } = await db.pool.query<{ text: string }>(
      `SELECT data::text AS text FROM eventstore.events WHERE event_type = 'DeviceRenamed'`,
    );
    expect(rows[0]!.text).to.equal('{"zeta":1,"alpha":{"y":true,"b":"x"}}');
  });
});
