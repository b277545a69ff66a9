import { DAY_MS } from '../src/domain/time.js';
import { installProjector } from '../src/projections/checkpoints.js';
import { telemetryProjector } from '../src/projections/telemetry/projector.js';
import { applyTelemetryRetention } from '../src/projections/telemetry/retention.js';
import { deleteExpired } from '../src/projections/telemetry/sql.js';
import { inTransaction, type Pool } from '../src/infra/postgres/pool.js';
import {
  PARTITIONED_TABLES,
  ensurePartitions,
  partitionFor,
} from '../src/projections/telemetry/time-partitions.js';
import { benchDatabase, machine, report } from './support.js';

/**
 * Telemetry retention, the two ways: one day of raw readings (BENCH_RETENTION_ROWS, 1,000,000 by default:
 * about 12 devices' worth of 3 readings a second) expired by deleting its rows in batches of 10,000, as
 * retention did before migration 0311 and still does in a converted table's first partition, and by
 * dropping the day's partition. Reports time and the WAL each writes (what a replica must replay).
 */
const ROWS = Number(process.env.BENCH_RETENTION_ROWS ?? 1_000_000);
const BATCH = 10_000;
// A day long enough ago that nothing else the benchmarks write falls in it.
const DAY = Date.parse('2020-03-01T00:00:00Z');
const CENTURY_DAYS = 36_500;

export async function retentionBenchmarks(): Promise<void> {
  const db = await benchDatabase();
  const context = { machine: machine(), postgres: db.serverVersion, rows: ROWS };
  await installProjector(db.pool, telemetryProjector());
  const partition = partitionFor(PARTITIONED_TABLES.raw, DAY);
  const fill = async () => {
    await inTransaction(db.pool, (client) => ensurePartitions(client, [partition]));
    await db.pool.query(
      `INSERT INTO telemetry_raw (device_id, filed_at, event_id, server_time, capabilities, reading_values)
       SELECT 'dev_' || (n % 12), t, gen_random_uuid(), t, '{environment.temperature}', jsonb_build_array(n % 40)
         FROM generate_series(1, $1::int) AS n,
              LATERAL (SELECT $2::timestamptz + ((n - 1) * 86.4 / $1::int) * interval '1000 second' AS t) AS s`,
      [ROWS, new Date(DAY).toISOString()],
    );
    await db.pool.query(`VACUUM ANALYZE ${partition.name}`);
  };
  const measure = async (figure: string, expire: () => Promise<number>) => {
    const before = await walPosition(db.pool);
    const started = process.hrtime.bigint();
    const expired = await expire();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const { rows } = await db.pool.query<{ bytes: string }>(
      'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS bytes',
      [before],
    );
    const walBytes = Number(rows[0]!.bytes);
    report({ figure, rowsExpired: expired, milliseconds: Math.round(ms), walBytes, ...context });
  };

  await fill();
  await measure('telemetry.retention.delete', async () => {
    const sql = deleteExpired(partition.name, 'filed_at');
    let deleted = 0;
    for (;;) {
      const { rowCount } = await db.pool.query(sql, [new Date(partition.toMs), BATCH]);
      deleted += rowCount ?? 0;
      if ((rowCount ?? 0) < BATCH) return deleted;
    }
  });
  await db.pool.query(`DROP TABLE ${partition.name}`);

  await fill();
  await measure('telemetry.retention.drop', async () => {
    // The raw horizon falls at the end of this day; the bucket tables' reach back a century, to nothing.
    const done = await applyTelemetryRetention(db.pool, {
      now: partition.toMs + 8 * DAY_MS,
      retention: { rawDays: 8, minuteDays: CENTURY_DAYS, hourDays: CENTURY_DAYS, dayDays: CENTURY_DAYS },
    });
    if (!done.dropped.includes(partition.name)) throw new Error(`${partition.name} was not dropped`);
    return ROWS;
  });
}

async function walPosition(pool: Pool): Promise<string> {
  return (await pool.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
}
