import { fileURLToPath } from 'node:url';

/**
 * The event store's SQL functions, one per file beside this one, in the order they are installed: a function
 * comes after those its body names when PostgreSQL checks the body as it is created (an SQL-language body is
 * parsed then; a PL/pgSQL one only when it first runs), and the triggers on eventstore.events after the
 * functions they execute. Every file is CREATE OR REPLACE (the triggers: only where they differ), applied on
 * every migrate (src/infra/postgres/migrate.ts); docs/eventstore.md says how a function's contract may change.
 */
export const EVENT_STORE_FUNCTION_FILES = [
  'storable',
  'find_repeated_append',
  'append_events',
  'append_streams',
  'append_batch',
  'read_horizon',
  'read_all_page',
  'read_types_page',
  'read_types_merged_page',
  'notify_append',
  'refuse_events_from_read_model_writers',
  'triggers',
] as const;

export const EVENT_STORE_FUNCTIONS: readonly string[] = EVENT_STORE_FUNCTION_FILES.map((name) =>
  fileURLToPath(new URL(`./${name}.sql`, import.meta.url)),
);
