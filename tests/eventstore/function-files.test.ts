import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { expect } from 'chai';
import {
  EVENT_STORE_FUNCTION_FILES,
  EVENT_STORE_FUNCTIONS,
} from '../../src/eventstore/postgres/functions/install-order.js';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import {
  ADDED_SINCE_FUNCTION_FILES,
  dumpEventStoreDefinitions,
  migrateAsBeforeFunctionFiles,
} from './function-definitions.js';

const FUNCTIONS_DIR = new URL('../../src/eventstore/postgres/functions/', import.meta.url);
describe('event-store functions: one file each, applied on every migrate', () => {
  const databases: TestDatabase[] = [];
  const database = async (options?: { migrated?: boolean }) => {
    const db = await freshDatabase(options);
    databases.push(db);
    return db;
  };
  afterEach(async () => {
    await Promise.all(databases.splice(0).map((db) => db.drop()));
  });

  it('installs every function and trigger exactly as the migrations that defined them left them', async () => {
    const current = await database();
    const before = await database({ migrated: false });
    await migrateAsBeforeFunctionFiles(before.pool);

    // Every function the version before had is installed as it was; the ones added since, besides.
    const installed = await dumpEventStoreDefinitions(current.pool, ADDED_SINCE_FUNCTION_FILES);
    expect(installed).to.contain('-- function eventstore.append_batch(text[],uuid[],text[],json[],json[])');
    expect(installed).to.contain('-- trigger events_notify ON eventstore.events');
    expect(installed).to.equal(await dumpEventStoreDefinitions(before.pool));
    const { rows: added } = await current.pool.query<{ signature: string }>(
      `SELECT oid::regprocedure::text AS signature FROM pg_proc WHERE oid::regprocedure::text = ANY ($1::text[])`,
      [ADDED_SINCE_FUNCTION_FILES],
    );
    expect(added.map((r) => r.signature)).to.have.members([...ADDED_SINCE_FUNCTION_FILES]);
  });

  it('installs the files of its folder, each once, and installs them again on every migrate', async () => {
    const files = (await readdir(FUNCTIONS_DIR)).filter((f) => f.endsWith('.sql')).sort();
    expect([...EVENT_STORE_FUNCTION_FILES].map((name) => `${name}.sql`).sort()).to.deep.equal(files);

    const db = await database();
    const installed = await dumpEventStoreDefinitions(db.pool);
    const version = () =>
      db.pool.query<{ xmin: string }>(
        `SELECT xmin::text FROM pg_proc WHERE oid = 'eventstore.append_batch(text[],uuid[],text[],json[],json[])'::regprocedure`,
      );
    const { rows: first } = await version();
    const report = await migrate(db.pool, EVENT_STORE_FUNCTIONS);
    expect(report.applied, 'no migration is pending').to.deep.equal([]);
    const { rows: again } = await version();
    expect(again[0]!.xmin, 'append_batch was made again').to.not.equal(first[0]!.xmin);
    expect(await dumpEventStoreDefinitions(db.pool)).to.equal(installed);
  });

  it('migrates a store of the version before to the same definitions', async () => {
    const current = await database();
    const before = await database({ migrated: false });
    await migrateAsBeforeFunctionFiles(before.pool);
    // Deployed stores also list the migrations that only defined functions: those are gone, and ignored.
    await before.pool.query(
      `INSERT INTO public.schema_migrations (name)
       VALUES ('0303_event_store_notify_transaction.sql'), ('0312_event_store_append_batch_numbered_by_lookup.sql')`,
    );
    const report = await migrate(before.pool, EVENT_STORE_FUNCTIONS);
    expect(report.applied).to.deep.equal([]);
    expect(await dumpEventStoreDefinitions(before.pool)).to.equal(
      await dumpEventStoreDefinitions(current.pool),
    );
  });

  it('does not wait for an append in flight, and makes a trigger again only when it differs', async () => {
    const db = await database();
    const installed = await dumpEventStoreDefinitions(db.pool);
    const appender = await db.pool.connect();
    try {
      await appender.query('BEGIN');
      await appender.query(
        `SELECT * FROM eventstore.append_events('device-dev_a', -1, $1::uuid[], '{DeviceRegistered}', '{"{}"}', '{NULL}')`,
        [[randomUUID()]],
      );
      const { rows: held } = await db.pool.query<{ mode: string }>(
        `SELECT mode FROM pg_locks WHERE pid = $1 AND relation = 'eventstore.events'::regclass AND granted`,
        [(await appender.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid],
      );
      expect(
        held.map((r) => r.mode),
        'the append holds its lock on the events',
      ).to.include('RowExclusiveLock');

      // Either the migrate commits, or it queues for a lock that the open append holds.
      let settled = false;
      const migrating = migrate(db.pool, EVENT_STORE_FUNCTIONS).finally(() => {
        settled = true;
      });
      const blocked = async () =>
        (
          await db.pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
          )
        ).rowCount! > 0;
      while (!settled && !(await blocked())) await new Promise((resolve) => setImmediate(resolve));
      expect(settled, 'migrate waited for the append in flight').to.equal(true);
      await migrating;
    } finally {
      await appender.query('ROLLBACK');
      appender.release();
    }

    // One trigger as the first migration made it, without the appended rows; the other missing.
    await db.pool.query(
      `CREATE OR REPLACE TRIGGER events_notify AFTER INSERT ON eventstore.events
         FOR EACH STATEMENT EXECUTE FUNCTION eventstore.notify_append();
       DROP TRIGGER events_never_from_read_model_writers ON eventstore.events;`,
    );
    expect(await dumpEventStoreDefinitions(db.pool)).to.not.equal(installed);
    await migrate(db.pool, EVENT_STORE_FUNCTIONS);
    expect(await dumpEventStoreDefinitions(db.pool), 'both made again as defined').to.equal(installed);
  });
});
