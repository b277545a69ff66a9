import { readFile } from 'node:fs/promises';
import { migrate } from '../../src/infra/postgres/migrate.js';
import type { Pool } from '../../src/infra/postgres/pool.js';

const DEFINITIONS_BEFORE = new URL(
  '../fixtures/eventstore-before-function-files/definitions.sql',
  import.meta.url,
);

/**
 * Every function of the eventstore schema and every trigger on its tables, as the server prints them back
 * (pg_get_functiondef, pg_get_triggerdef), in name order: one SQL script that makes them all again on a
 * database that has the tables and none of them. Comparing two such texts from the same server compares
 * what is installed, whatever files installed it.
 */
export async function dumpEventStoreDefinitions(
  pool: Pool,
  /** Functions left out, by signature: those added since the version a dump is held against. */
  omitted: readonly string[] = [],
): Promise<string> {
  const { rows: functions } = await pool.query<{ signature: string; definition: string }>(
    `SELECT p.oid::regprocedure::text AS signature, pg_get_functiondef(p.oid) AS definition
       FROM pg_proc p WHERE p.pronamespace = 'eventstore'::regnamespace
        AND NOT (p.oid::regprocedure::text = ANY ($1::text[])) ORDER BY 1`,
    [omitted],
  );
  const { rows: triggers } = await pool.query<{ name: string; definition: string }>(
    `SELECT t.tgname || ' ON ' || t.tgrelid::regclass::text AS name, pg_get_triggerdef(t.oid) AS definition
       FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE c.relnamespace = 'eventstore'::regnamespace AND NOT t.tgisinternal ORDER BY 1`,
  );
  return [
    // As pg_dump does: a body that names a function later in name order is checked when it first runs.
    `SELECT set_config('check_function_bodies', 'off', true);\n`,
    ...functions.map((f) => `-- function ${f.signature}\n${f.definition.trimEnd()};\n`),
    ...triggers.map((t) => `-- trigger ${t.name}\n${t.definition};\n`),
  ].join('\n');
}

/**
 * Leaves an empty database as the version before the function files migrated it: the migrations (which then
 * also defined the functions and triggers; today they hold only the tables, which are the same) and the
 * definitions those migrations left in force.
 */
/** Functions the version before the function files did not have, by signature. */
export const ADDED_SINCE_FUNCTION_FILES = [
  'eventstore.read_types_merged_page(xid8,bigint,integer,text[])',
] as const;

export async function migrateAsBeforeFunctionFiles(pool: Pool): Promise<void> {
  await migrate(pool, []);
  await pool.query(await readFile(DEFINITIONS_BEFORE, 'utf8'));
}
