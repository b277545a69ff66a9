import pg from 'pg';

/**
 * pg.Pool's own `query` ends the connection whenever the query fails, even when PostgreSQL answered with an
 * error and the connection is as good as before. Our errors are mostly of that kind and expected: an append
 * that lost a race (DC001), a twin append (unique violation). Each then cost a new backend, ~40 ms of
 * connecting and authenticating, at the moment a writer is contended. Here a connection is given back when
 * the server answered with an ERROR, which ends the statement and not the session; anything else (FATAL,
 * a broken socket, a client-side timeout) still drops it.
 */
class ConnectionKeepingPool extends pg.Pool {
  // Callers see pg.Pool's overloads; `never` is what lets one implementation stand for all of them.
  override query(...args: unknown[]): never {
    const [text, values, callback] = args;
    if (typeof callback === 'function' || typeof values === 'function') {
      throw new TypeError('query callbacks are not supported: await the promise');
    }
    if (typeof text === 'object' && text !== null && 'submit' in text) {
      throw new TypeError('submittable queries go through a client of their own (pool.connect())');
    }
    return this.#query(text as string | pg.QueryConfig, values as unknown[] | undefined) as never;
  }

  async #query(text: string | pg.QueryConfig, values: unknown[] | undefined): Promise<pg.QueryResult> {
    const client = await this.connect();
    try {
      const result = await client.query(text, values);
      client.release();
      return result;
    } catch (error) {
      const statementOnly = error instanceof pg.DatabaseError && error.severity === 'ERROR';
      client.release(statementOnly ? undefined : (error as Error));
      throw error;
    }
  }
}

// bigint columns (event positions, revisions, counts) arrive as strings; the code converts them itself.
export function createPool(
  connectionString: string,
  options: { max?: number; applicationName?: string } = {},
): pg.Pool {
  const pool = new ConnectionKeepingPool({
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

/** How a transaction ends. */
export interface CommitOptions {
  /**
   * false: COMMIT returns without waiting for the WAL flush (`synchronous_commit = off` for this transaction
   * only, set in the same round trip as BEGIN). A crash of the server or the machine in the next fraction of
   * a second may then undo the transaction whole; only work that can be done again from the event store
   * may ask for it.
   */
  readonly waitForFlush?: boolean;
}

const BEGIN_WITHOUT_FLUSH_WAIT = 'BEGIN; SET LOCAL synchronous_commit = off';

/** Runs `work` in one transaction on one connection; rolls back on any error. */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  options: CommitOptions = {},
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(options.waitForFlush === false ? BEGIN_WITHOUT_FLUSH_WAIT : 'BEGIN');
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
