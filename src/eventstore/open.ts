import type { Config } from '../config.js';
import type { Logger } from '../infra/logger.js';
import type { Pool } from '../infra/postgres/pool.js';
import type { EventStore } from './port.js';
import type { SharedReads } from './shared-pages.js';
import { PostgresEventStore } from './postgres/adapter.js';

/**
 * Opens the event store the configuration names: a kurrentdb:// or esdb:// EVENTSTORE_URL selects KurrentDB
 * (EVENTSTORE_FOLLOWER_READS: read $all and subscribe from followers); otherwise events live in the
 * service's own PostgreSQL database, whose subscriptions at the head wait PROJECTION_IDLE_POLL_MS for an
 * append before they read anyway and tell `logger` when the connection that listens for appends is lost.
 */
export async function openEventStore(
  config: Pick<Config, 'EVENTSTORE_URL' | 'EVENTSTORE_FOLLOWER_READS' | 'PROJECTION_IDLE_POLL_MS'>,
  database: { readonly pool: Pool; readonly url: string },
  logger: Logger,
  options: {
    /** Postgres: subscriptions within these types share their reads (shared-pages.ts). */
    sharedReads?: SharedReads;
  } = {},
): Promise<EventStore> {
  const url = config.EVENTSTORE_URL;
  if (url && /^(kurrentdb|esdb)(\+discover)?:\/\//.test(url)) {
    const { createKurrentDbEventStore } = await import('./kurrentdb/adapter.js');
    return createKurrentDbEventStore(url, { followerReads: config.EVENTSTORE_FOLLOWER_READS });
  }
  if (url && url !== database.url) {
    throw new Error(
      'EVENTSTORE_URL may name a KurrentDB server; a Postgres event store lives in DATABASE_URL',
    );
  }
  return new PostgresEventStore(database.pool, {
    connectionString: database.url,
    idlePollMs: config.PROJECTION_IDLE_POLL_MS,
    logger,
    sharedReads: options.sharedReads,
  });
}
