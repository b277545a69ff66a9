import type { Config } from '../config.js';
import type { Logger } from '../infra/logger.js';
import { startEmbeddedPostgres } from '../infra/postgres/embedded.js';
import { migrate } from '../infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../eventstore/postgres/functions/install-order.js';
import { createLockPool, createPool, type Pool } from '../infra/postgres/pool.js';
import { createReadModelPool } from '../eventstore/postgres/read-model-writers.js';

export interface Database {
  readonly url: string;
  readonly pool: Pool;
  /**
   * Connections that hold session advisory locks (projector and scheduler leadership) for as long as they
   * lead. They live outside the query pool, so leaders can never starve queries of connections.
   */
  readonly locks: Pool;
  /** Connections that write read models and never append events (src/eventstore/postgres/read-model-writers.ts). */
  readonly readModels: Pool;
  /**
   * Connections that answer the API's read-model queries and the waits on projection positions that go
   * with them: a read-only replica's (DATABASE_REPLICA_URL) when set, else the same pool as `pool`.
   */
  readonly queries: Pool;
  readonly embedded: boolean;
  close(): Promise<void>;
}

/** DATABASE_URL when set, else the embedded cluster; migrations run before anything else touches it. */
export async function openDatabase(
  config: Config,
  logger: Logger,
  options: { poolSize?: number } = {},
): Promise<Database> {
  const embedded = config.DATABASE_URL
    ? undefined
    : await startEmbeddedPostgres({ dataDir: config.DATA_DIR, port: config.EMBEDDED_PG_PORT, logger });
  const url = config.DATABASE_URL ?? embedded!.url;
  const pool = createPool(url, { max: options.poolSize ?? 20 });
  const locks = createLockPool(url);
  const readModels = createReadModelPool(url);
  const queries = config.DATABASE_REPLICA_URL
    ? createPool(config.DATABASE_REPLICA_URL, {
        max: options.poolSize ?? 20,
        applicationName: 'device-cloud-queries',
      })
    : pool;
  const endAll = () =>
    Promise.all([pool.end(), locks.end(), readModels.end(), queries === pool ? undefined : queries.end()]);
  try {
    const report = await migrate(pool, EVENT_STORE_FUNCTIONS);
    if (report.applied.length > 0) logger.info({ applied: report.applied }, 'migrations applied');
  } catch (error) {
    await endAll();
    await embedded?.stop();
    throw error;
  }
  return {
    url,
    pool,
    locks,
    readModels,
    queries,
    embedded: embedded !== undefined,
    async close() {
      await endAll();
      await embedded?.stop();
    },
  };
}
