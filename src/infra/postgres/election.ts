import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger.js';
import type { Pool } from './pool.js';

const TRY_LOCK = 'SELECT pg_try_advisory_lock(hashtext($1)) AS ok';
const UNLOCK = 'SELECT pg_advisory_unlock(hashtext($1))';

interface Session {
  query<Row extends object>(sql: string, values: unknown[]): Promise<{ rows: Row[] }>;
}

/**
 * Takes the session advisory lock `name` on this connection unless another session holds it: the lock an
 * election is won by, so whoever else takes it keeps every elected instance of `name` standing by.
 */
export async function tryLock(connection: Session, name: string): Promise<boolean> {
  return (await connection.query<{ ok: boolean }>(TRY_LOCK, [name])).rows[0]!.ok;
}

/** Releases the session advisory lock `name` this connection holds. */
export async function unlock(connection: Session, name: string): Promise<void> {
  await connection.query(UNLOCK, [name]);
}

/** The lock a projector's runner is elected by (runner.ts); repartitioning takes it too (partitioning.ts). */
export function projectorLock(projectorName: string): string {
  return `projector:${projectorName}`;
}
const ALIVE = 'SELECT 1';
/**
 * A leader whose host vanishes without closing its socket would otherwise hold the lock until the server's
 * TCP keepalive gives up (hours by default): ask the server to probe this session after 5 s of silence,
 * every 2 s, 3 times, so the lock is released about 11 s after the host is gone. Ignored on Unix sockets.
 */
const PROBE_SESSION =
  'SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; SET tcp_keepalives_count = 3';

export interface ElectionOptions {
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** How long a standby waits before trying to take over. Default 5 s. */
  readonly standbyRetryMs?: number;
  /** How often the active instance checks that its lock connection is alive. Default 5 s. */
  readonly livenessCheckMs?: number;
  /** Asked before each try: false keeps this instance standing by without trying (a share already full). */
  readonly mayLead?: () => boolean;
}

/**
 * Runs `lead` only while this process holds the PostgreSQL session advisory lock `name`: one active
 * instance across every process on the database, the others standing by and retrying. The lock lives with
 * its connection, so if that connection dies the lock is gone for everyone: the leader notices (connection
 * error or a failed liveness query), aborts `lead`'s signal and goes back to standing by.
 */
export async function runElected(
  pool: Pool,
  name: string,
  lead: (leadership: AbortSignal) => Promise<void>,
  options: ElectionOptions,
): Promise<void> {
  const { signal, logger } = options;
  while (!signal.aborted) {
    let leading = false;
    // Set when `lead` returned while its leadership still held: it stepped down (a partition handed over).
    let steppedDown = false;
    if (options.mayLead && !options.mayLead()) {
      await sleep(options.standbyRetryMs ?? 5000, undefined, { signal }).catch(() => undefined);
      continue;
    }
    try {
      const connection = await pool.connect();
      const leadership = new AbortController();
      const lost = () => leadership.abort();
      connection.on('error', lost);
      signal.addEventListener('abort', lost, { once: true });
      // A stop that came while the connection was being opened fired before the listener existed.
      if (signal.aborted) lost();
      let unlocked = false;
      try {
        await connection.query(PROBE_SESSION);
        leading = await tryLock(connection, name);
        if (leading) {
          logger.info({ lock: name }, 'elected: this instance is active');
          const watch = watchConnection(connection, leadership, options.livenessCheckMs ?? 5000);
          try {
            await lead(leadership.signal);
            steppedDown = !leadership.signal.aborted;
          } finally {
            leadership.abort();
            await watch;
          }
          unlocked = await unlock(connection, name).then(
            () => true,
            () => false,
          );
        }
      } finally {
        signal.removeEventListener('abort', lost);
        connection.off('error', lost);
        // A connection that may still hold the lock must not go back to the pool: destroy it instead.
        connection.release(leading && !unlocked ? true : undefined);
      }
    } catch (error) {
      if (!signal.aborted) logger.error({ err: error, lock: name }, 'election failed; retrying');
    }
    if (leading && !signal.aborted) {
      if (steppedDown) logger.info({ lock: name }, 'stepped down; standing by');
      else logger.warn({ lock: name }, 'lost the lock; standing by');
    }
    await sleep(options.standbyRetryMs ?? 5000, undefined, { signal }).catch(() => undefined);
  }
}

async function watchConnection(
  connection: { query(sql: string): Promise<unknown> },
  leadership: AbortController,
  everyMs: number,
): Promise<void> {
  while (!leadership.signal.aborted) {
    await sleep(everyMs, undefined, { signal: leadership.signal }).catch(() => undefined);
    if (leadership.signal.aborted) return;
    await connection.query(ALIVE).catch(() => leadership.abort());
  }
}
