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
 * Applies the ordered files of ./migrations that this database has not seen, then every file of
 * `functionFiles` in the order given, all in one transaction, so a failed file leaves the schema as it was.
 * Migrations hold schema and data changes and run once each; function files hold CREATE OR REPLACE
 * definitions (the event store's: src/eventstore/postgres/functions) and run on every call, so the
 * definitions in force are always the files of the version that migrated last. Start-up and
 * `devcloud migrate` both call it; concurrent callers queue on an advisory lock.
 */
export async function migrate(pool: pg.Pool, functionFiles: readonly string[]): Promise<MigrationReport> {
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
      await runFile(lockHolder, path.join(migrationsDir, file), `migration ${file}`);
      await lockHolder.query('INSERT INTO public.schema_migrations (name) VALUES ($1)', [file]);
      applied.push(file);
    }
    for (const file of functionFiles) {
      await runFile(lockHolder, file, `function file ${path.basename(file)}`);
    }
    return { applied, alreadyApplied: done.size };
  });
}

async function runFile(client: pg.PoolClient, file: string, what: string): Promise<void> {
  const sql = await readFile(file, 'utf8');
  try {
    await client.query(sql);
  } catch (error) {
    throw new Error(`${what} failed: ${(error as Error).message}`, { cause: error });
  }
}
