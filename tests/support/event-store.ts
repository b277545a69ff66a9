import sinon from 'sinon';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import type { Logger } from '../../src/infra/logger.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { databaseAndDirectoryForSuite, freshDatabase, type TestDatabase } from './database.js';
import { until } from './edge-agent.js';

/** A fresh migrated database with a PostgreSQL event store over it: what most suites start from. */
export interface RunningEventStore {
  readonly db: TestDatabase;
  readonly store: PostgresEventStore;
}

interface StoreOptions {
  /** How often an idle subscription polls when no notification wakes it (the adapter's default: 2,000 ms). */
  readonly idlePollMs?: number;
  readonly logger?: Logger;
}

/** Another store over a database, as a second process would open one. */
export function eventStoreOver(db: TestDatabase, options: StoreOptions = {}): PostgresEventStore {
  return new PostgresEventStore(db.pool, { connectionString: db.url, ...options });
}

export async function openEventStore(options: StoreOptions = {}): Promise<RunningEventStore> {
  const db = await freshDatabase();
  return { db, store: eventStoreOver(db, options) };
}

/**
 * A fresh store for each test of the suite that calls it (mocha's hooks), with sinon restored after each;
 * read `db` and `store` inside the tests.
 */
export function eventStoreForEachTest(options: StoreOptions = {}): RunningEventStore {
  return eventStoreBetween(beforeEach, afterEach, options);
}

/** One store for all the tests of the suite that calls it, with sinon restored after them. */
export function eventStoreForSuite(options: StoreOptions = {}): RunningEventStore {
  return eventStoreBetween(before, after, options);
}

function eventStoreBetween(
  open: Mocha.HookFunction,
  close: Mocha.HookFunction,
  options: StoreOptions,
): RunningEventStore {
  let running: Partial<RunningEventStore> = {};
  open(async () => {
    running = await openEventStore(options);
  });
  close(async () => {
    sinon.restore();
    await closeEventStore(running);
    running = {};
  });
  return {
    get db() {
      return running.db!;
    },
    get store() {
      return running.store!;
    },
  };
}

/**
 * One store and one temporary directory for a suite whose tests run processes against them (mocha's hooks):
 * after the suite, `stopFirst` stops those processes, then the store closes and the directory goes. Read
 * `db`, `store` and `dataDir` inside the tests.
 */
export function storeAndDirectoryForSuite(
  prefix: string,
  stopFirst: () => Promise<void>,
  options: StoreOptions = {},
): RunningEventStore & { readonly dataDir: string } {
  let store: PostgresEventStore | undefined;
  const suite = databaseAndDirectoryForSuite(prefix, async () => {
    await stopFirst();
    await store?.close();
  });
  before(() => {
    store = eventStoreOver(suite.db, options);
  });
  return {
    get db() {
      return suite.db;
    },
    get store() {
      return store!;
    },
    get dataDir() {
      return suite.dataDir;
    },
  };
}

/** Closes the store (its LISTEN connection), then drops the database; either is absent if setup failed. */
export async function closeEventStore(running: Partial<RunningEventStore>): Promise<void> {
  await running.store?.close();
  await running.db?.drop();
}

/**
 * Waits until readers see the event at `position`. The read horizon may hide a committed event for a
 * moment: a transaction that was running when a reader's snapshot was taken and ended before its database
 * could be told counts as ours (docs/eventstore.md), which happens under load from other databases on the
 * same server. Tests that read right after an append, and are not about that moment, wait here first.
 */
export function untilVisible(store: EventStore, position: string, ms = 10_000): Promise<true> {
  return until(
    'the append visible to readers',
    async () => {
      const head = await store.headPosition();
      return head !== undefined && store.comparePositions(head, position) >= 0 ? true : undefined;
    },
    ms,
  );
}
