import type { Logger } from '../infra/logger.js';
import type { Pool } from '../infra/postgres/pool.js';
import type { EventStore } from './port.js';
import type { SharedReads } from './shared-pages.js';
import { PostgresEventStore } from './postgres/adapter.js';

/**
 * Chooses the adapter from EVENTSTORE_URL: a kurrentdb:// or esdb:// connection string selects KurrentDB;
 * otherwise events live in the service's own PostgreSQL database.
 */
export async function openEventStore(options: {
  eventStoreUrl: string | undefined;
  /** KurrentDB: read $all and subscribe from followers (EVENTSTORE_FOLLOWER_READS). */
  followerReads?: boolean;
  pool: Pool;
  databaseUrl: string;
  /** Postgres: how long a subscription at the head waits for an append before it reads anyway. */
  idlePollMs?: number;
  /** Postgres: hears when the connection that listens for appends is lost and back. */
  logger?: Logger;
  /** Postgres: subscriptions within these types share their reads (shared-pages.ts). */
  sharedReads?: SharedReads;
}): Promise<EventStore> {
  const url = options.eventStoreUrl;
  if (url && /^(kurrentdb|esdb)(\+discover)?:\/\//.test(url)) {
    const { createKurrentDbEventStore } = await import('./kurrentdb/adapter.js');
    return createKurrentDbEventStore(url, { followerReads: options.followerReads });
  }
  if (url && url !== options.databaseUrl) {
    throw new Error(
      'EVENTSTORE_URL may name a KurrentDB server; a Postgres event store lives in DATABASE_URL',
    );
  }
  return new PostgresEventStore(options.pool, {
    connectionString: options.databaseUrl,
    idlePollMs: options.idlePollMs,
    logger: options.logger,
    sharedReads: options.sharedReads,
  });
}
