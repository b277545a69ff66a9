import pg from 'pg';

// bigint columns (event positions, revisions, counts) arrive as strings; the code converts them itself.
export function createPool(
  connectionString: string,
  options: { max?: number; applicationName?: string } = {},
): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'device-cloud',
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
  });
  // A client that loses its server emits 'error', idle or checked out; without a listener that crashes the
  // whole process. The query in flight fails with the same error, and the pool drops the broken client when
  // it is released, so swallowing the event loses nothing.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * The pool of leadership connections: one per elected role (each projector, the scheduler) that this process
 * runs, held for as long as it leads. Sized for every projector plus the scheduler, with room for a rebuild.
 */
export function createLockPool(connectionString: string): pg.Pool {
  return createPool(connectionString, { max: 32, applicationName: 'device-cloud-locks' });
}

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/** Runs `work` in one transaction on one connection; rolls back on any error. */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
