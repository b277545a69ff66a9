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
  // An idle client that loses its server emits 'error'; without a listener that would crash the process.
  pool.on('error', () => {});
  return pool;
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
