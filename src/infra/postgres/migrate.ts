import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { inTransaction } from './pool.js';

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

// Any fixed 64-bit key works; it only has to differ from the projector and scheduler locks.
const MIGRATION_LOCK_KEY = 7_330_001;

export interface MigrationReport {
  readonly applied: string[];
  readonly alreadyApplied: number;
}

/**
 * Applies the ordered files of ./migrations that this database has not seen, all in one transaction, so a
 * failed file leaves the schema as it was. Start-up and `devcloud migrate` both call it; concurrent
 * callers queue on an advisory lock.
 */
export async function migrate(pool: pg.Pool): Promise<MigrationReport> {
  const files = (await readdir(migrationsDir)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
  return inTransaction(pool, async (lockHolder) => {
    await lockHolder.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await lockHolder.query(
      `CREATE TABLE IF NOT EXISTS public.schema_migrations (
         name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = new Set(
      (await lockHolder.query<{ name: string }>('SELECT name FROM public.schema_migrations')).rows.map(
        (r) => r.name,
      ),
    );
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = await readFile(path.join(migrationsDir, file), 'utf8');
      try {
        await lockHolder.query(sql);
        await lockHolder.query('INSERT INTO public.schema_migrations (name) VALUES ($1)', [file]);
      } catch (error) {
        throw new Error(`migration ${file} failed: ${(error as Error).message}`, { cause: error });
      }
      applied.push(file);
    }
    return { applied, alreadyApplied: done.size };
  });
}
