import { DAY_MS } from '../../domain/time.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { BUCKET_TABLES, deleteExpired } from './sql.js';

/** How long each telemetry table keeps its rows, in days (config: TELEMETRY_*_RETENTION_DAYS). */
export interface TelemetryRetention {
  readonly rawDays: number;
  readonly minuteDays: number;
  readonly hourDays: number;
  readonly dayDays: number;
}

const TARGETS = [
  { table: 'telemetry_raw', column: 'filed_at', days: (r: TelemetryRetention) => r.rawDays },
  { table: BUCKET_TABLES['1m'], column: 'bucket_start', days: (r: TelemetryRetention) => r.minuteDays },
  { table: BUCKET_TABLES['1h'], column: 'bucket_start', days: (r: TelemetryRetention) => r.hourDays },
  { table: BUCKET_TABLES['1d'], column: 'bucket_start', days: (r: TelemetryRetention) => r.dayDays },
].map((t) => ({ ...t, sql: deleteExpired(t.table, t.column) }));

/**
 * Deletes expired raw readings and buckets in batches (short transactions, so the projector is never held
 * up). Expired rows are older than any reading the projector may still file (7 days back at most), so the
 * two never touch the same rows. Returns how many rows left each table.
 */
export async function deleteExpiredTelemetry(
  pool: Pool,
  options: { retention: TelemetryRetention; now: number; batchSize?: number; signal?: AbortSignal },
): Promise<Record<string, number>> {
  const batchSize = options.batchSize ?? 10_000;
  const deleted: Record<string, number> = {};
  for (const target of TARGETS) {
    const before = new Date(options.now - target.days(options.retention) * DAY_MS);
    let count = 0;
    for (;;) {
      if (options.signal?.aborted) break;
      const { rowCount } = await pool.query(target.sql, [before, batchSize]);
      count += rowCount ?? 0;
      if ((rowCount ?? 0) < batchSize) break;
    }
    deleted[target.table] = count;
  }
  return deleted;
}
