import type { EventStore } from '../eventstore/port.js';
import { pageReader } from '../eventstore/read-ahead.js';
import { inTransaction, type Pool, type PoolClient } from '../infra/postgres/pool.js';
import type { Projector } from './projector.js';

/**
 * Creates the projector's tables afresh in `schema` (dropped first if it exists) and replays the global
 * order into them from the start, batch by batch, up to the head visible now. Returns where it stopped and
 * how many events it applied. A rebuild starts this way; tests and the soak use it to compare a live
 * read model with a clean replay of the same events. Its batches commit without waiting for the WAL
 * flush: whoever uses the copy commits durably afterwards (a rebuild's swap flushes them with it). The
 * projector's query indexes are built after the last batch, in one pass each.
 */
export async function replayIntoSchema(
  pool: Pool,
  store: EventStore,
  projector: Projector,
  schema: string,
  options: { batchSize: number; signal?: AbortSignal; onBatch?: (applied: number) => void },
): Promise<{ position: string | undefined; applied: number }> {
  assertSchemaName(schema);
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.query(`CREATE SCHEMA ${schema}`);
  await inSchema(pool, schema, (client) => client.query(projector.schemaSql));
  const caughtUp = await replayPages(
    store,
    projector,
    undefined,
    options.batchSize,
    (events, prepared) =>
      inSchema(pool, schema, async (client) => {
        // A replay cut short starts again from scratch, so its batches need not wait for the WAL flush.
        await client.query('SET LOCAL synchronous_commit = off');
        return projector.apply(events, client, prepared);
      }),
    options,
  );
  const { queryIndexSql } = projector;
  if (queryIndexSql) await inSchema(pool, schema, (client) => client.query(queryIndexSql));
  return caughtUp;
}

/**
 * Reads the projector's events after `position` page by page up to the visible head and hands each
 * non-empty page to `apply`.
 */
export async function replayPages(
  store: EventStore,
  projector: Projector,
  from: string | undefined,
  batchSize: number,
  apply: (events: Parameters<Projector['apply']>[0], prepared: unknown) => Promise<unknown>,
  options: { signal?: AbortSignal; onBatch?: (applied: number) => void } = {},
): Promise<{ position: string | undefined; applied: number }> {
  let position = from;
  let applied = 0;
  const pages = pageReader(
    store,
    { maxCount: batchSize, eventTypes: projector.eventTypes, dataAsStored: projector.dataAsStored },
    { prepare: projector.prepare?.bind(projector) },
  );
  for (;;) {
    if (options.signal?.aborted) throw new Error('replay aborted');
    const page = await pages.read(position);
    if (!page.atEnd) pages.readAhead(page.lastPosition);
    if (page.events.length > 0) await apply(page.events, page.prepared);
    applied += page.events.length;
    if (page.lastPosition !== undefined) position = page.lastPosition;
    options.onBatch?.(applied);
    if (page.atEnd) return { position, applied };
  }
}

/** One transaction whose unqualified table names resolve to `schema` first. */
export async function inSchema<T>(
  pool: Pool,
  schema: string,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  assertSchemaName(schema);
  return inTransaction(pool, async (client) => {
    await client.query(`SET LOCAL search_path = ${schema}, public`);
    return work(client);
  });
}

/**
 * Every row of `schema.table` as JSON text, sorted, leaving out `exclude` columns (such as identity columns
 * that count attempts rather than content). Two read models are equal when these lists are.
 */
export async function tableContents(
  pool: Pool,
  schema: string,
  table: string,
  exclude: readonly string[] = [],
): Promise<string[]> {
  assertSchemaName(schema);
  assertSchemaName(table);
  const { rows } = await pool.query<{ row: string }>(
    `SELECT (to_jsonb(t) - $1::text[])::text AS row FROM ${schema}.${table} t ORDER BY 1`,
    [exclude],
  );
  return rows.map((r) => r.row);
}

function assertSchemaName(name: string): void {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new RangeError(`not a plain SQL name: ${name}`);
}
