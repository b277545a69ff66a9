import { randomBytes } from 'node:crypto';
import type { Pool } from '../../infra/postgres/pool.js';

// The first instance to ask creates the key; a concurrent creator's insert waits for ours and does nothing.
const INSERT_KEY = 'INSERT INTO cursor_keys (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING';
const SELECT_KEY = 'SELECT secret FROM cursor_keys WHERE name = $1';

/** A 256-bit key per cursor kind, persisted in PostgreSQL and read once per process. */
export function cursorKeys(pool: Pool): (name: string) => Promise<Buffer> {
  const loaded = new Map<string, Promise<Buffer>>();
  return (name) => {
    let key = loaded.get(name);
    if (!key) {
      key = loadOrCreate(pool, name);
      key.catch(() => loaded.delete(name)); // a failed read is retried by the next request
      loaded.set(name, key);
    }
    return key;
  };
}

async function loadOrCreate(pool: Pool, name: string): Promise<Buffer> {
  const existing = await pool.query<{ secret: Buffer }>(SELECT_KEY, [name]);
  if (existing.rows[0]) return existing.rows[0].secret;
  await pool.query(INSERT_KEY, [name, randomBytes(32)]);
  const { rows } = await pool.query<{ secret: Buffer }>(SELECT_KEY, [name]);
  return rows[0]!.secret;
}
