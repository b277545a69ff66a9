import pg from 'pg';
import { bind, prepared } from '../../infra/postgres/prepared.js';
import type { PoolClient } from '../../infra/postgres/pool.js';

/**
 * The telemetry tables are partitioned by time (docs/telemetry.md, section 7), so retention drops whole
 * partitions instead of deleting rows. Each table's partitions cover one UTC day, month or year, named by
 * where they start: telemetry_raw_20261126, telemetry_1h_202611, telemetry_1d_2026. A table converted from
 * the unpartitioned shape (migration 0311) also has one partition named <table>_before_<YYYYMMDD> holding
 * every older row.
 */

type PartitionSpan = 'day' | 'month' | 'year';

export interface PartitionedTable {
  readonly table: string;
  /** The column the table is partitioned by. */
  readonly column: string;
  readonly span: PartitionSpan;
  /** Storage parameters each partition is created with. */
  readonly storage?: string;
}

export const PARTITIONED_TABLES = {
  raw: { table: 'telemetry_raw', column: 'filed_at', span: 'day' },
  // Bucket rows are updated in place batch after batch: free space in each page keeps those updates HOT.
  '1m': { table: 'telemetry_1m', column: 'bucket_start', span: 'day', storage: 'fillfactor = 80' },
  '1h': { table: 'telemetry_1h', column: 'bucket_start', span: 'month', storage: 'fillfactor = 80' },
  '1d': { table: 'telemetry_1d', column: 'bucket_start', span: 'year', storage: 'fillfactor = 80' },
} as const satisfies Record<string, PartitionedTable>;

export interface TimePartition {
  readonly target: PartitionedTable;
  readonly name: string;
  readonly fromMs: number;
  readonly toMs: number;
}

/** The partition of `target` that holds a row whose partitioning column is `ms`. */
export function partitionFor(target: PartitionedTable, ms: number): TimePartition {
  const at = new Date(ms);
  const year = at.getUTCFullYear();
  const month = target.span === 'year' ? 0 : at.getUTCMonth();
  const day = target.span === 'day' ? at.getUTCDate() : 1;
  const fromMs = Date.UTC(year, month, day);
  const toMs =
    target.span === 'day'
      ? Date.UTC(year, month, day + 1)
      : target.span === 'month'
        ? Date.UTC(year, month + 1, 1)
        : Date.UTC(year + 1, 0, 1);
  const name = `${target.table}_${compactDate(fromMs).slice(0, digitsOf(target.span))}`;
  return { target, name, fromMs, toMs };
}

/** The partitions of `target` that rows at these times need, each once. */
export function partitionsFor(target: PartitionedTable, times: Iterable<number>): TimePartition[] {
  const found = new Map<string, TimePartition>();
  let lastFrom = NaN;
  let lastTo = NaN;
  for (const ms of times) {
    // Rows of a batch mostly fall in one partition: skip the date arithmetic while they do.
    if (ms >= lastFrom && ms < lastTo) continue;
    const partition = partitionFor(target, ms);
    found.set(partition.name, partition);
    lastFrom = partition.fromMs;
    lastTo = partition.toMs;
  }
  return [...found.values()];
}

/**
 * Where a partition of `target` ends, read from its name: the start of the next span for a regular
 * partition, the date in the name for the converted table's `_before_` partition. Undefined for a name
 * this module did not give.
 */
export function partitionEnd(target: PartitionedTable, name: string): number | undefined {
  const prefix = `${target.table}_`;
  if (!name.startsWith(prefix)) return undefined;
  const suffix = name.slice(prefix.length);
  const before = /^before_(\d{4})(\d{2})(\d{2})$/.exec(suffix);
  if (before) return Date.UTC(Number(before[1]), Number(before[2]) - 1, Number(before[3]));
  if (!/^\d+$/.test(suffix) || suffix.length !== digitsOf(target.span)) return undefined;
  const start = Date.UTC(
    Number(suffix.slice(0, 4)),
    Number(suffix.slice(4, 6) || '01') - 1,
    Number(suffix.slice(6, 8) || '01'),
  );
  return partitionFor(target, start).toMs;
}

/** True for the converted table's partition, which holds every row before its date. */
export function isBeforePartition(target: PartitionedTable, name: string): boolean {
  return name.startsWith(`${target.table}_before_`);
}

const digitsOf = (span: PartitionSpan) => (span === 'day' ? 8 : span === 'month' ? 6 : 4);

function compactDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10).replaceAll('-', '');
}

/**
 * The partitions, among those named ($1, of tables $2, ending on day $3 as YYYYMMDD), that are not yet
 * attached partitions of their table, in the schema the table resolves to, and do not lie inside a
 * converted table's first partition (which ends on a span's boundary, so it holds a partition whole or not
 * at all). `state` says what stands in the way: nothing, a table of that name left detached by an
 * interrupted retention run, or a partition whose concurrent detach was interrupted.
 */
const PARTITIONS_TO_CREATE = prepared(
  'telemetry.partitions-to-create',
  `
  SELECT n.name, t.schema,
         CASE WHEN c.oid IS NULL THEN 'missing' WHEN i.inhrelid IS NULL THEN 'stray' ELSE 'detaching' END
           AS state
    FROM unnest($1::text[], $2::text[], $3::text[]) AS n(name, parent, end_day)
    JOIN LATERAL (SELECT p.oid, p.relnamespace, ns.nspname AS schema
                    FROM pg_class p JOIN pg_namespace ns ON ns.oid = p.relnamespace
                   WHERE p.oid = to_regclass(n.parent)) t ON true
    LEFT JOIN pg_class c ON c.relname = n.name AND c.relnamespace = t.relnamespace
    LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = t.oid
   WHERE (c.oid IS NULL OR i.inhrelid IS NULL OR i.inhdetachpending)
     AND NOT EXISTS (
           SELECT 1 FROM pg_inherits b JOIN pg_class bc ON bc.oid = b.inhrelid
            WHERE b.inhparent = t.oid AND NOT b.inhdetachpending
              AND left(bc.relname, length(n.parent) + 8) = n.parent || '_before_'
              AND substr(bc.relname, length(n.parent) + 9) >= n.end_day)`,
);

/** One lock for every change to the telemetry tables' partitions in a schema ($1), so two creators never race. */
export const PARTITION_CHANGE_LOCK = `SELECT pg_advisory_xact_lock(hashtext('telemetry-partitions:' || $1))`;

/**
 * Makes sure the partitions in `needed` exist, inside the caller's transaction, in the schema the tables
 * resolve to on its search path. Checking costs one catalogue read; creating takes the partitioned table's
 * exclusive lock until the transaction ends, which is why the scheduler creates the coming days'
 * partitions ahead (retention.ts) and a projector seldom has to. What an interrupted retention run left
 * under a needed name (expired rows, as retention detaches nothing else) is dropped first.
 */
export async function ensurePartitions(db: PoolClient, needed: readonly TimePartition[]): Promise<number> {
  if (needed.length === 0) return 0;
  const columns = [
    needed.map((p) => p.name),
    needed.map((p) => p.target.table),
    needed.map((p) => compactDate(p.toMs)),
  ];
  const toCreate = async () =>
    (
      await db.query<{ name: string; schema: string; state: 'missing' | 'stray' | 'detaching' }>(
        bind(PARTITIONS_TO_CREATE, columns),
      )
    ).rows;
  const first = await toCreate();
  if (first.length === 0) return 0;
  for (const schema of new Set(first.map((r) => r.schema))) await db.query(PARTITION_CHANGE_LOCK, [schema]);
  const rows = await toCreate();
  for (const row of rows) {
    const partition = needed.find((p) => p.name === row.name)!;
    const parent = qualified(row.schema, partition.target.table);
    const table = qualified(row.schema, partition.name);
    if (row.state === 'detaching') await db.query(`ALTER TABLE ${parent} DETACH PARTITION ${table} FINALIZE`);
    if (row.state !== 'missing') await db.query(`DROP TABLE ${table}`);
    await db.query(
      `CREATE TABLE ${table} PARTITION OF ${parent}
         FOR VALUES FROM ('${new Date(partition.fromMs).toISOString()}') TO ('${new Date(partition.toMs).toISOString()}')
         ${partition.target.storage ? `WITH (${partition.target.storage})` : ''}`,
    );
  }
  return rows.length;
}

/** A table's name qualified by its schema, each quoted. */
export function qualified(schema: string, table: string): string {
  return `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`;
}
