import { DAY_MS } from '../../domain/time.js';
import { isBusyError } from '../../infra/postgres/errors.js';
import { inTransaction, type Pool } from '../../infra/postgres/pool.js';
import { rollUpMinutes } from './roll-up.js';
import { deleteExpired } from './sql.js';
import {
  PARTITIONED_TABLES,
  ensurePartitions,
  isBeforePartition,
  partitionEnd,
  partitionsFor,
  qualified,
  type PartitionedTable,
  type TimePartition,
} from './time-partitions.js';

/** How long each telemetry table keeps its rows, in days (config: TELEMETRY_*_RETENTION_DAYS). */
export interface TelemetryRetention {
  readonly rawDays: number;
  readonly minuteDays: number;
  readonly hourDays: number;
  readonly dayDays: number;
}

const TARGETS: readonly { target: PartitionedTable; days: (r: TelemetryRetention) => number }[] = [
  { target: PARTITIONED_TABLES.raw, days: (r) => r.rawDays },
  { target: PARTITIONED_TABLES['1m'], days: (r) => r.minuteDays },
  { target: PARTITIONED_TABLES['1h'], days: (r) => r.hourDays },
  { target: PARTITIONED_TABLES['1d'], days: (r) => r.dayDays },
];

/** How far ahead the scheduler creates partitions, so a projector almost never has to. */
const CREATE_AHEAD_DAYS = 2;

/**
 * A table's partitions, attached or not, in the schema the table resolves to: a partition whose detach
 * was interrupted is still attached with detach pending; one detached but not yet dropped is a plain table
 * of the same name. A table may have only one detach pending, and no other partition can be detached
 * concurrently until it is finished: pending ones come first.
 */
const PARTITIONS_OF = `
  SELECT c.relname AS name, ns.nspname AS schema, i.inhdetachpending AS detach_pending,
         i.inhrelid IS NOT NULL AS attached
    FROM pg_class t
    JOIN pg_namespace ns ON ns.oid = t.relnamespace
    JOIN pg_class c ON c.relnamespace = t.relnamespace
    LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = t.oid
   WHERE t.oid = to_regclass($1) AND c.relkind = 'r' AND left(c.relname, length($1) + 1) = $1 || '_'
   ORDER BY i.inhdetachpending IS TRUE DESC, c.relname`;

export interface RetentionReport {
  /** Partitions dropped whole, each wholly older than its table's horizon. */
  readonly dropped: string[];
  /** Rows deleted one by one, per table: only from a converted table's first partition (migration 0311). */
  readonly deleted: Record<string, number>;
  /** Partitions created ahead of need. */
  readonly created: number;
  /** Steps that failed, each left for the next run (the others went on): what and why. */
  readonly failed: { readonly step: string; readonly reason: string }[];
}

/**
 * Telemetry retention, hourly from the scheduler. A partition whose whole span is older than its table's
 * horizon is detached without blocking queries or the projector (DETACH … CONCURRENTLY) and dropped, so a
 * row is kept at least its retention and at most one span (day, month, year) more. Only the first
 * partition of a converted table, which spans everything before the conversion, has its expired rows
 * deleted in batches until the whole of it has expired. Expired rows are older than any reading the
 * projector may still file (7 days back at most), so the two never touch the same rows. The coming days'
 * partitions are created here too.
 */
export async function applyTelemetryRetention(
  pool: Pool,
  options: { retention: TelemetryRetention; now: number; batchSize?: number; signal?: AbortSignal },
): Promise<RetentionReport> {
  const batchSize = options.batchSize ?? 10_000;
  const report = {
    dropped: [] as string[],
    deleted: {} as Record<string, number>,
    created: 0,
    failed: [] as { step: string; reason: string }[],
  };
  // One failing step (a lock not granted, a partition in an odd state) must not stop the others: an
  // expired partition retried for ever ahead of the rest would let the tables grow without bound.
  const attempt = async (step: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      report.failed.push({ step, reason: error instanceof Error ? error.message : String(error) });
    }
  };
  const ahead = Array.from({ length: CREATE_AHEAD_DAYS + 1 }, (_, n) => options.now + n * DAY_MS);
  for (const { target, days } of TARGETS) {
    if (options.signal?.aborted) break;
    const horizon = options.now - days(options.retention) * DAY_MS;
    if (target === PARTITIONED_TABLES['1m']) {
      // Minutes of a series that fell silent may still wait to be rolled up into their hour and day.
      await attempt('roll up the minutes before the 1m horizon', () =>
        inTransaction(pool, (client) => rollUpMinutes(client, { before: horizon })),
      );
    }
    await attempt(`create ${target.table} partitions ahead`, async () => {
      report.created += await createAhead(pool, partitionsFor(target, ahead));
    });
    const { rows } = await pool.query<{
      name: string;
      schema: string;
      detach_pending: boolean | null;
      attached: boolean;
    }>(PARTITIONS_OF, [target.table]);
    for (const partition of rows) {
      if (options.signal?.aborted) break;
      const end = partitionEnd(target, partition.name);
      if (end === undefined) continue;
      const table = qualified(partition.schema, partition.name);
      if (end <= horizon) {
        await attempt(`drop ${partition.name}`, async () => {
          if (partition.attached) {
            const how = partition.detach_pending ? 'FINALIZE' : 'CONCURRENTLY';
            const parent = qualified(partition.schema, target.table);
            await pool.query(`ALTER TABLE ${parent} DETACH PARTITION ${table} ${how}`);
          }
          await pool.query(`DROP TABLE IF EXISTS ${table}`);
          report.dropped.push(partition.name);
        });
      } else if (isBeforePartition(target, partition.name)) {
        await attempt(`delete expired rows of ${partition.name}`, async () => {
          report.deleted[target.table] = await deleteInBatches(pool, table, target.column, {
            before: new Date(horizon),
            batchSize,
            signal: options.signal,
          });
        });
      }
    }
  }
  return report;
}

/**
 * Creating a partition locks its table against readers until the transaction ends; behind a long writer
 * that wait would queue every query, so it gives up after a second and the projector creates the
 * partition when it first needs it.
 */
async function createAhead(pool: Pool, partitions: readonly TimePartition[]): Promise<number> {
  try {
    return await inTransaction(pool, async (client) => {
      await client.query(`SET LOCAL lock_timeout = '1s'`);
      return ensurePartitions(client, partitions);
    });
  } catch (error) {
    if (isBusyError(error)) return 0;
    throw error;
  }
}

async function deleteInBatches(
  pool: Pool,
  table: string,
  column: string,
  options: { before: Date; batchSize: number; signal?: AbortSignal },
): Promise<number> {
  const sql = deleteExpired(table, column);
  let count = 0;
  for (;;) {
    if (options.signal?.aborted) return count;
    const { rowCount } = await pool.query(sql, [options.before, options.batchSize]);
    count += rowCount ?? 0;
    if ((rowCount ?? 0) < options.batchSize) return count;
  }
}
