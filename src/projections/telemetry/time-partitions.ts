import type { PoolClient } from '../../infra/postgres/pool.js';

/**
 * The telemetry tables are partitioned by time (docs/telemetry.md, section 7), so retention drops whole
 * partitions instead of deleting rows. Each table's partitions cover one UTC day, month or year, named by
 * where they start: telemetry_raw_20261126, telemetry_1h_202611, telemetry_1d_2026. A table converted from
 * the unpartitioned shape (migration 0311) also has one partition named <table>_before_<YYYYMMDD> holding
 * every older row.
 */

export type PartitionSpan = 'day' | 'month' | 'year';

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
 * The partitions, among those named ($1, of tables $2, ending on day $3 as YYYYMMDD), that neither exist in
 * the schema the tables resolve to nor lie inside a converted table's first partition (which ends on a
 * span's boundary, so it holds a partition whole or not at all).
 */
const MISSING_PARTITIONS = `
  SELECT n.name
    FROM unnest($1::text[], $2::text[], $3::text[]) AS n(name, parent, end_day)
   WHERE NOT EXISTS (
           SELECT 1 FROM pg_class c
            WHERE c.relnamespace = current_schema()::regnamespace
              AND (c.relname = n.name
                   OR (c.relispartition AND left(c.relname, length(n.parent) + 8) = n.parent || '_before_'
                       AND substr(c.relname, length(n.parent) + 9) >= n.end_day)))`;

/** One lock for every change to the telemetry tables' partitions of a schema, so two creators never race. */
export const PARTITION_CHANGE_LOCK = `SELECT pg_advisory_xact_lock(hashtext('telemetry-partitions:' || current_schema()))`;

const createPartition = (p: TimePartition) =>
  `CREATE TABLE IF NOT EXISTS ${p.name} PARTITION OF ${p.target.table}
     FOR VALUES FROM ('${new Date(p.fromMs).toISOString()}') TO ('${new Date(p.toMs).toISOString()}')
     ${p.target.storage ? `WITH (${p.target.storage})` : ''}`;

/**
 * Creates the partitions among `needed` that are missing, inside the caller's transaction (in the schema
 * its search path resolves the tables to). Checking first costs one catalogue read; creating takes the
 * partitioned table's exclusive lock until the transaction ends, which is why the scheduler creates the
 * coming days' partitions ahead (retention.ts) and a projector seldom has to.
 */
export async function ensurePartitions(db: PoolClient, needed: readonly TimePartition[]): Promise<number> {
  if (needed.length === 0) return 0;
  const columns = [
    needed.map((p) => p.name),
    needed.map((p) => p.target.table),
    needed.map((p) => compactDate(p.toMs)),
  ];
  const missing = async () =>
    new Set((await db.query<{ name: string }>(MISSING_PARTITIONS, columns)).rows.map((r) => r.name));
  if ((await missing()).size === 0) return 0;
  await db.query(PARTITION_CHANGE_LOCK);
  const toCreate = await missing();
  for (const partition of needed)
    if (toCreate.has(partition.name)) await db.query(createPartition(partition));
  return toCreate.size;
}
