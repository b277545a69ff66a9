import type { StoredResolution } from '../../domain/readings/index.js';
import { prepared } from '../../infra/postgres/prepared.js';

/** Statements of the telemetry read model (tables in schema.sql). Bucket tables differ only by name. */

export const BUCKET_TABLES: Readonly<Record<StoredResolution, string>> = {
  '1m': 'telemetry_1m',
  '1h': 'telemetry_1h',
  '1d': 'telemetry_1d',
};

export const INSERT_SITE_ZONES = `
  INSERT INTO telemetry_site_zones (site_id, timezone)
  SELECT * FROM unnest($1::text[], $2::text[])
  ON CONFLICT (site_id) DO NOTHING`;

export const SITE_ZONES = `SELECT site_id, timezone FROM telemetry_site_zones WHERE site_id = ANY ($1::text[])`;

const EPOCH = `timestamptz 'epoch'`;
const MS = `interval '1 millisecond'`;

/**
 * A batch's buckets of one table (folded per bucket in memory, batch-fold.ts), merged into the stored
 * rows. Batches come in global order, so on equal times the stored first and the incoming last win. A
 * counter's increase stays exact when the batch's readings all follow the stored ones; otherwise it becomes
 * null, and the bucket comes back from the statement to be recomputed from its raw readings. The merge is
 * resetAwareRise (domain/readings/aggregation.ts).
 */
const upsertBuckets = (name: string, table: string, resolution: string) => `
  ${name} AS (
    INSERT INTO ${table} AS t (device_id, capability, bucket_start, samples, sum, min, max,
                               first_at, first_value, last_at, last_value, increase)
    SELECT b.device_id, b.capability, ${EPOCH} + b.start_${resolution} * ${MS},
           b.samples, b.sum, b.min, b.max,
           ${EPOCH} + b.first_ms * ${MS}, b.first_value, ${EPOCH} + b.last_ms * ${MS}, b.last_value, b.increase
      FROM buckets b
     WHERE b.start_${resolution} IS NOT NULL
    ON CONFLICT (device_id, capability, bucket_start) DO UPDATE
       SET samples = t.samples + excluded.samples,
           sum = t.sum + excluded.sum,
           min = least(t.min, excluded.min),
           max = greatest(t.max, excluded.max),
           first_at = CASE WHEN excluded.first_at < t.first_at THEN excluded.first_at ELSE t.first_at END,
           first_value = CASE WHEN excluded.first_at < t.first_at THEN excluded.first_value ELSE t.first_value END,
           last_at = CASE WHEN excluded.last_at >= t.last_at THEN excluded.last_at ELSE t.last_at END,
           last_value = CASE WHEN excluded.last_at >= t.last_at THEN excluded.last_value ELSE t.last_value END,
           increase = CASE
             WHEN t.increase IS NULL OR excluded.increase IS NULL OR excluded.first_at < t.last_at THEN NULL
             ELSE t.increase + excluded.increase
                  + CASE WHEN excluded.first_value >= t.last_value THEN excluded.first_value - t.last_value
                         ELSE excluded.first_value END
           END
    RETURNING t.device_id, t.capability, t.bucket_start, t.increase
  )`;

/**
 * The position of the last event this projector ($1, a partition's own name) applied: a replayed event at
 * or before it is skipped.
 */
export const APPLIED_POSITION = prepared(
  'telemetry.applied-position',
  `SELECT position FROM telemetry_applied WHERE projector = $1`,
);

/**
 * One batch in one statement: its raw rows (one per instant of a message, schema.sql) appended to
 * telemetry_raw in order of application ($1-$7), its buckets ($8-$21, one row per fold: its start in each
 * resolution it stands for, batch-fold.ts) merged into the 1m, 1h and 1d tables, and the applied position
 * ($22, of projector $24) moved. Returns the counter buckets ($23: counter keys) whose increase must be
 * recomputed.
 */
export const RECORD_BATCH = prepared(
  'telemetry.record-batch',
  `
  WITH raw AS (
    INSERT INTO telemetry_raw (device_id, filed_at, event_id, device_time, server_time, capabilities, reading_values)
    SELECT r.device_id, ${EPOCH} + r.filed_ms * ${MS}, r.event_id, r.device_time, r.server_time,
           r.capabilities::text[], r.reading_values
      FROM unnest($1::text[], $2::int8[], $3::uuid[], $4::timestamptz[], $5::timestamptz[], $6::text[],
                  $7::jsonb[]) WITH ORDINALITY
           AS r(device_id, filed_ms, event_id, device_time, server_time, capabilities, reading_values, n)
     ORDER BY r.n
  ),
  buckets AS (
    SELECT *
      FROM unnest($8::text[], $9::text[], $10::int8[], $11::int8[], $12::int8[], $13::int4[], $14::float8[],
                  $15::float8[], $16::float8[], $17::int8[], $18::float8[], $19::int8[], $20::float8[],
                  $21::float8[])
           AS b(device_id, capability, start_1m, start_1h, start_1d, samples, sum, min, max, first_ms,
                first_value, last_ms, last_value, increase)
  ),
  applied AS (
    INSERT INTO telemetry_applied (projector, position) VALUES ($24, $22)
    ON CONFLICT (projector) DO UPDATE SET position = excluded.position
  ),${upsertBuckets('minutes', 'telemetry_1m', '1m')},${upsertBuckets('hours', 'telemetry_1h', '1h')},${upsertBuckets(
    'days',
    'telemetry_1d',
    '1d',
  )}
  SELECT '1m' AS resolution, device_id, capability, (extract(epoch FROM bucket_start) * 1000)::float8 AS start_ms
    FROM minutes WHERE increase IS NULL AND capability = ANY ($23::text[])
  UNION ALL
  SELECT '1h', device_id, capability, (extract(epoch FROM bucket_start) * 1000)::float8
    FROM hours WHERE increase IS NULL AND capability = ANY ($23::text[])
  UNION ALL
  SELECT '1d', device_id, capability, (extract(epoch FROM bucket_start) * 1000)::float8
    FROM days WHERE increase IS NULL AND capability = ANY ($23::text[])`,
);

/**
 * Every reading of the raw rows `where` picks, with its capability and its place in its row: what
 * resolution=raw and a counter bucket's increase read, each ordering by filing time, order of application,
 * then place (message order, as the rows of one message are applied in that order).
 */
const rawReadings = (where: string) => `
  SELECT raw.capabilities[i] AS capability, raw.filed_at, raw.reading_values -> (i - 1) AS value,
         raw.device_time, raw.server_time, raw.applied, i AS place
    FROM telemetry_raw raw
    CROSS JOIN LATERAL generate_subscripts(raw.capabilities, 1) AS i
   WHERE ${where}`;

/**
 * For the touched counter buckets whose increase the merge had to drop: the reset-aware rise along their
 * raw readings, in filing order then application order. Buckets merged in order are not looked at.
 */
const recomputeIncrease = (table: string) => `
  UPDATE ${table} AS t
     SET increase = r.increase
    FROM (
      SELECT k.device_id, k.capability, k.bucket_start,
             coalesce(sum(CASE WHEN s.previous IS NULL THEN 0
                               WHEN s.v >= s.previous THEN s.v - s.previous
                               ELSE s.v END), 0) AS increase
        FROM (SELECT u.*
                FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[])
                     AS u(device_id, capability, bucket_start, bucket_end)
                JOIN ${table} b
                  ON b.device_id = u.device_id AND b.capability = u.capability
                 AND b.bucket_start = u.bucket_start
               WHERE b.increase IS NULL) k
        CROSS JOIN LATERAL (
          SELECT x.value::float8 AS v, lag(x.value::float8) OVER (ORDER BY x.filed_at, x.applied, x.place) AS previous
            FROM (${rawReadings(`raw.device_id = k.device_id AND raw.filed_at >= k.bucket_start
                                 AND raw.filed_at < k.bucket_end AND raw.capabilities[i] = k.capability`)}) x
        ) s
       GROUP BY k.device_id, k.capability, k.bucket_start
    ) r
   WHERE t.device_id = r.device_id AND t.capability = r.capability AND t.bucket_start = r.bucket_start
     AND t.increase IS NULL`;

const selectBuckets = (table: string) => `
  SELECT capability, bucket_start, samples, sum, min, max, first_value, last_value, increase
    FROM ${table}
   WHERE device_id = $1 AND capability = ANY ($2::text[]) AND bucket_start >= $3 AND bucket_start < $4
   ORDER BY capability, bucket_start`;

/**
 * The points of a stored resolution, built where the buckets are, as the text of the response's JSON array
 * items: one number per bucket instead of every statistic, and no row for Node to parse and serialise
 * again, which is what keeps a day of 1-minute points fast. The arithmetic is pointValue's
 * (domain/readings/aggregation.ts) for every function but increase; a test holds them equal. Numbers are
 * written as PostgreSQL prints a float8 (shortest exact form, as JavaScript's), a non-finite one as null, as
 * JSON.stringify writes it; a missing one (no such function) also as null, rather than dropping the point.
 *
 * Each capability ($2, its function $5) is read on its own, in bucket order straight from the key's
 * index, which PostgreSQL 16 and later aggregate without sorting; its item prefix ($6,
 * `{"capability_key":…,"bucket":"`) comes written from Node rather than built per bucket. The sort and the
 * per-bucket prefix took about a quarter of the statement's time for a day of 1-minute points
 * (docs/performance.md, "Telemetry queries: points read per capability").
 */
// The format of Date.prototype.toISOString, so both paths write bucket times identically.
const ISO_UTC = 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"';

const selectPointsJson = (table: string) => `
  SELECT coalesce(string_agg(c.points, ',' ORDER BY a.n), '') AS points
    FROM unnest($2::text[], $5::text[], $6::text[]) WITH ORDINALITY AS a(capability, aggregation, prefix, n)
    CROSS JOIN LATERAL (
      SELECT string_agg(
               a.prefix || to_char(b.bucket_start AT TIME ZONE 'UTC', '${ISO_UTC}')
                 || '","value":' || CASE WHEN p.value IS NULL OR p.value IN ('Infinity', '-Infinity', 'NaN')
                                         THEN 'null' ELSE p.value::text END
                 || ',"samples":' || b.samples || '}',
               ',' ORDER BY b.bucket_start) AS points
        FROM ${table} b
        CROSS JOIN LATERAL (
          SELECT CASE a.aggregation
                   WHEN 'avg' THEN b.sum / b.samples
                   WHEN 'min' THEN b.min
                   WHEN 'max' THEN b.max
                   WHEN 'sum' THEN b.sum
                   WHEN 'first' THEN b.first_value
                   WHEN 'last' THEN b.last_value
                   WHEN 'count' THEN b.samples
                 END AS value
        ) p
       WHERE b.device_id = $1 AND b.capability = a.capability AND b.bucket_start >= $3 AND b.bucket_start < $4
    ) c`;

/** The last value of each capability's newest bucket before $3: the baseline of a window's first increase. */
const selectPreviousLast = (table: string) => `
  SELECT c.capability, p.last_value
    FROM unnest($2::text[]) AS c(capability)
    CROSS JOIN LATERAL (
      SELECT b.last_value FROM ${table} b
       WHERE b.device_id = $1 AND b.capability = c.capability AND b.bucket_start < $3
       ORDER BY b.bucket_start DESC
       LIMIT 1
    ) p`;

const perTable = <T>(
  make: (table: string, resolution: StoredResolution) => T,
): Readonly<Record<StoredResolution, T>> => ({
  '1m': make(BUCKET_TABLES['1m'], '1m'),
  '1h': make(BUCKET_TABLES['1h'], '1h'),
  '1d': make(BUCKET_TABLES['1d'], '1d'),
});

export const RECOMPUTE_INCREASE = perTable(recomputeIncrease);
export const SELECT_BUCKETS = perTable(selectBuckets);
export const SELECT_PREVIOUS_LAST = perTable(selectPreviousLast);
// Run for every telemetry query: prepared, so each connection plans it once per resolution.
export const SELECT_POINTS_JSON = perTable((table, resolution) =>
  prepared(`telemetry.points-json.${resolution}`, selectPointsJson(table)),
);

/** How many readings telemetry_raw holds (its rows are instants of several readings each). */
export const COUNT_RAW_READINGS = `SELECT coalesce(sum(cardinality(capabilities)), 0)::int AS n FROM telemetry_raw`;

export const SELECT_RAW = `
  SELECT x.capability, x.filed_at, x.value, x.device_time, x.server_time
    FROM (${rawReadings(`raw.device_id = $1 AND raw.filed_at >= $3 AND raw.filed_at < $4
                         AND raw.capabilities && $2::text[] AND raw.capabilities[i] = ANY ($2::text[])`)}) x
   ORDER BY x.filed_at, x.applied, x.place
   LIMIT $5`;

/** Retention: one batch of expired rows of a table, found through its BRIN index. */
export const deleteExpired = (table: string, column: string) => `
  DELETE FROM ${table}
   WHERE ctid = ANY (ARRAY(SELECT ctid FROM ${table} WHERE ${column} < $1 LIMIT $2))`;
