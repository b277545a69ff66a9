import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { freshDatabase, type TestDatabase } from './database.js';

/** A fresh migrated database with a PostgreSQL event store over it: what most suites start from. */
export interface RunningEventStore {
  readonly db: TestDatabase;
  readonly store: PostgresEventStore;
}

interface StoreOptions {
  /** How often an idle subscription polls when no notification wakes it (the adapter's default: 250 ms). */
  readonly idlePollMs?: number;
}

/** Another store over a database, as a second process would open one. */
export function eventStoreOver(db: TestDatabase, options: StoreOptions = {}): PostgresEventStore {
  return new PostgresEventStore(db.pool, { connectionString: db.url, ...options });
}

export async function openEventStore(options: StoreOptions = {}): Promise<RunningEventStore> {
  const db = await freshDatabase();
  return { db, store: eventStoreOver(db, options) };
}

/** Closes the store (its LISTEN connection), then drops the database; either is absent if setup failed. */
export async function closeEventStore(running: Partial<RunningEventStore>): Promise<void> {
  await running.store?.close();
  await running.db?.drop();
}
