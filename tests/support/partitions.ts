import { expect } from 'chai';
import type { Pool } from '../../src/infra/postgres/pool.js';
import { until } from './edge-agent.js';

/**
 * Leaves `partition` of `parent` as a crash or a cancel during `DETACH … CONCURRENTLY` would: still
 * attached, detach pending. The detach is started while a reader's snapshot holds the table, so it waits,
 * and is cancelled while it waits; the state is checked before returning.
 */
export async function interruptConcurrentDetach(
  pool: Pool,
  parent: string,
  partition: string,
): Promise<void> {
  const reader = await pool.connect();
  const detacher = await pool.connect();
  try {
    await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await reader.query(`SELECT count(*) FROM ${parent}`);
    const pid = (await detacher.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const detach = detacher
      .query(`ALTER TABLE ${parent} DETACH PARTITION ${partition} CONCURRENTLY`)
      .catch((e: unknown) => e);
    await until(
      'the detach to wait for the reader',
      async () => {
        const { rows } = await pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`,
          [pid],
        );
        return rows.length > 0 ? true : undefined;
      },
      5_000,
    );
    await pool.query('SELECT pg_cancel_backend($1)', [pid]);
    expect(await detach).to.have.property('code', '57014');
  } finally {
    await reader.query('ROLLBACK');
    reader.release();
    detacher.release();
  }
  const { rows } = await pool.query(
    `SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = $1::regclass`,
    [partition],
  );
  expect(rows, 'detach left pending').to.deep.equal([{ inhdetachpending: true }]);
}

/** The partitions attached to a table, by name. */
export async function attachedPartitions(pool: Pool, table: string): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1) ORDER BY 1`,
    [table],
  );
  return rows.map((r) => r.name);
}
