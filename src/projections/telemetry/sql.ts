import type { StoredResolution } from '../../domain/readings/index.js';
import { prepared } from '../../infra/postgres/prepared.js';

/** Statements of the telemetry read model (tables in schema.sql). Bucket tables differ only by name. */

const BUCKET_TABLES: Readonly<Record<StoredResolution, string>> = {
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
 * Rows merged into the stored buckets of one table: `source` selects device_id, capability, bucket,
 * samples, sum, min, max, first_at, first_value, last_at, last_value and increase, one row per bucket.
 * Batches come in global order, so on equal times the stored first and the incoming last win. A counter's
 * increase stays exact when the incoming readings all follow the stored ones; otherwise it becomes null,
 * and the bucket comes back from the statement to be recomputed from its raw readings. The merge is
 * resetAwareRise (domain/readings/aggregation.ts).
 */
const upsertBuckets = (name: string, table: string, source: string) => `
  ${name} AS (
    INSERT INTO ${table} AS t (device_id, capability, bucket_start, samples, sum, min, max,
                               first_at, first_value, last_at, last_value, increase)
    SELECT s.device_id, s.capability, s.bucket, s.samples, s.sum, s.min, s.max,
           s.first_at, s.first_value, s.last_at, s.last_value, s.increase
      FROM (${source}) s
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
             ELSE t.increase + excluded.increase + ${rise('t.last_value', 'excluded.first_value')}
           END
    RETURNING t.device_id, t.capability, t.bucket_start, t.increase, t.samples
  )`;

/** resetAwareRise (domain/readings/aggregation.ts) from one reading to the next. */
const rise = (from: string, to: string) => `CASE WHEN ${to} >= ${from} THEN ${to} - ${from} ELSE ${to} END`;

/** The UTC hour of a minute; the local day of a minute is recorded with it (telemetry_pending). */
const HOUR_OF_MINUTE = [
  `date_trunc('hour', x.minute, 'UTC')`,
  `date_trunc('hour', x.minute, 'UTC') + interval '1 hour'`,
] as const;
const DAY_OF_MINUTE = ['x.day_start', 'x.day_end'] as const;

/**
 * Minute rows (`source`: device_id, capability, minute, day_start, day_end and a bucket's statistics)
 * reduced to one row per (device, capability, bucket) of a coarser resolution (`bucketOf`, over `x`).
 * Minutes split time, so within a bucket they follow each other in minute order: the first reading is the
 * first minute's, the last the last one's, and a counter's increase chains exactly, the minutes' own
 * increases plus each rise from one minute's last reading to the next one's first. `bucket_end` is the
 * bucket's end, for a recomputation of its increase.
 */
const minutesFolded = (source: string, [bucketOf, bucketEnd]: readonly [string, string]) => `
  SELECT y.device_id, y.capability, y.bucket, max(y.bucket_end) AS bucket_end,
         sum(y.samples)::int AS samples, sum(y.sum) AS sum, min(y.min) AS min, max(y.max) AS max,
         min(y.first_at) AS first_at, (array_agg(y.first_value ORDER BY y.minute))[1] AS first_value,
         max(y.last_at) AS last_at, (array_agg(y.last_value ORDER BY y.minute DESC))[1] AS last_value,
         CASE WHEN bool_and(y.increase IS NOT NULL) THEN sum(y.increase + y.rise) END AS increase
    FROM (
      SELECT x.*, ${bucketOf} AS bucket,
             ${bucketEnd} AS bucket_end,
             CASE WHEN lag(x.last_value) OVER w IS NULL THEN 0
                  ELSE ${rise('lag(x.last_value) OVER w', 'x.first_value')} END AS rise
        FROM (${source}) x
      WINDOW w AS (PARTITION BY x.device_id, x.capability, ${bucketOf} ORDER BY x.minute)
    ) y
   GROUP BY y.device_id, y.capability, y.bucket`;

/** What RECORD_BATCH and ROLL_UP_MINUTES return: the counter buckets whose increase must be recomputed. */
const staleCounters = (name: string, resolution: string, ends: string, counterKeys: string) => `
  SELECT '${resolution}' AS resolution, u.device_id, u.capability,
         (extract(epoch FROM u.bucket_start) * 1000)::float8 AS start_ms,
         ${ends} AS end_ms
    FROM ${name} u
   WHERE u.increase IS NULL AND u.capability = ANY (${counterKeys})`;

const endOf = (folds: string) => `
  (SELECT (extract(epoch FROM f.bucket_end) * 1000)::float8 FROM ${folds} f
    WHERE f.device_id = u.device_id AND f.capability = u.capability AND f.bucket = u.bucket_start)`;

/**
 * Minutes not yet rolled up into their hour and day (telemetry_pending, schema.sql) whose minute is before
 * $2 (ms since the epoch), of the devices $1 (every device when null), merged into telemetry_1h and
 * telemetry_1d and taken off the list, in one statement. Returns the counter buckets ($3: counter keys)
 * whose increase must be recomputed, with their ends.
 */
const rollUpMinutes = (devices: string) => `
  WITH due AS (
    DELETE FROM telemetry_pending p
     WHERE p.bucket_start < ${EPOCH} + $2::int8 * ${MS} ${devices}
    RETURNING p.device_id, p.capability, p.bucket_start, p.day_start, p.day_end
  ),
  rolled AS MATERIALIZED (
    SELECT d.device_id, d.capability, m.bucket_start AS minute, d.day_start, d.day_end, m.samples, m.sum, m.min,
           m.max, m.first_at, m.first_value, m.last_at, m.last_value, m.increase
      FROM due d
      JOIN telemetry_1m m
        ON m.device_id = d.device_id AND m.capability = d.capability AND m.bucket_start = d.bucket_start
  ),
  hour_folds AS MATERIALIZED (${minutesFolded('SELECT * FROM rolled', HOUR_OF_MINUTE)}),
  day_folds AS MATERIALIZED (${minutesFolded('SELECT * FROM rolled', DAY_OF_MINUTE)}),${upsertBuckets(
    'hours',
    'telemetry_1h',
    'SELECT * FROM hour_folds',
  )},${upsertBuckets('days', 'telemetry_1d', 'SELECT * FROM day_folds')}
  ${staleCounters('hours', '1h', endOf('hour_folds'), '$3::text[]')}
  UNION ALL
  ${staleCounters('days', '1d', endOf('day_folds'), '$3::text[]')}`;

/** The rollup of a batch's devices ($1), before the projector writes the batch (projector.ts). */
export const ROLL_UP_MINUTES = prepared(
  'telemetry.roll-up-minutes',
  rollUpMinutes('AND p.device_id = ANY ($1::text[])'),
);

/** The rollup of every device's minutes before $2 ($1 unused, null): retention, before it drops minutes. */
export const ROLL_UP_ALL_MINUTES = rollUpMinutes('AND $1::text[] IS NULL');

/**
 * The position of the last event this projector ($1, a partition's own name) applied: a replayed event at
 * or before it is skipped. And the rollup cutoff (projector.ts): the latest any partition used, so that it
 * never goes back for a device, whichever partition follows it.
 */
export const APPLIED_POSITION = prepared(
  'telemetry.applied-position',
  `SELECT (SELECT position FROM telemetry_applied WHERE projector = $1) AS position,
          (SELECT max(rolled_before) FROM telemetry_applied)::float8 AS rolled_before`,
);

/** RECORD_BATCH's and RECORD_CLOSED_BATCH's raw rows, $1-$7: one per instant, in order of application. */
const RAW_ROWS = `
  raw AS (
    INSERT INTO telemetry_raw (device_id, filed_at, event_id, device_time, server_time, capabilities, reading_values)
    SELECT r.device_id, ${EPOCH} + r.filed_ms * ${MS}, r.event_id, r.device_time, r.server_time,
           r.capabilities::text[], r.reading_values
      FROM unnest($1::text[], $2::int8[], $3::uuid[], $4::timestamptz[], $5::timestamptz[], $6::text[],
                  $7::jsonb[]) WITH ORDINALITY
           AS r(device_id, filed_ms, event_id, device_time, server_time, capabilities, reading_values, n)
     ORDER BY r.n
  )`;

/** The applied position ($22) and rollup cutoff ($25, never back) of projector $24. */
const APPLIED = `
  applied AS (
    INSERT INTO telemetry_applied AS a (projector, position, rolled_before) VALUES ($24, $22, $25)
    ON CONFLICT (projector) DO UPDATE
       SET position = excluded.position, rolled_before = greatest(a.rolled_before, excluded.rolled_before)
  )`;

/**
 * One batch in one statement: its raw rows (one per instant of a message, schema.sql) appended to
 * telemetry_raw in order of application ($1-$7), its minute folds ($8-$21, batch-fold.ts: device,
 * capability, minute, the minute's local day and its end, statistics) merged into telemetry_1m, and the
 * applied position ($22, of projector $24) and rollup cutoff ($25, ms) moved. A minute from the cutoff on
 * is listed in telemetry_pending when the batch creates it, to be rolled up into its hour and day later
 * (ROLL_UP_MINUTES); an earlier one, whose own minutes were rolled up before this statement, goes into its
 * hour and day now.
 * Returns the counter buckets ($23: counter keys) whose increase must be recomputed.
 */
export const RECORD_BATCH = prepared(
  'telemetry.record-batch',
  `
  WITH ${RAW_ROWS},
  folds AS MATERIALIZED (
    SELECT b.device_id, b.capability, ${EPOCH} + b.minute_ms * ${MS} AS minute,
           ${EPOCH} + b.day_ms * ${MS} AS day_start, ${EPOCH} + b.day_end_ms * ${MS} AS day_end, b.samples,
           b.sum, b.min, b.max, ${EPOCH} + b.first_ms * ${MS} AS first_at, b.first_value,
           ${EPOCH} + b.last_ms * ${MS} AS last_at, b.last_value, b.increase, b.minute_ms >= $25::int8 AS pending
      FROM unnest($8::text[], $9::text[], $10::int8[], $11::int8[], $12::int8[], $13::int4[], $14::float8[],
                  $15::float8[], $16::float8[], $17::int8[], $18::float8[], $19::int8[], $20::float8[],
                  $21::float8[])
           AS b(device_id, capability, minute_ms, day_ms, day_end_ms, samples, sum, min, max, first_ms,
                first_value, last_ms, last_value, increase)
  ),
  ${APPLIED},
  closed_hours AS MATERIALIZED (${minutesFolded('SELECT * FROM folds WHERE NOT pending', HOUR_OF_MINUTE)}),
  closed_days AS MATERIALIZED (${minutesFolded('SELECT * FROM folds WHERE NOT pending', DAY_OF_MINUTE)}),${upsertBuckets(
    'minutes',
    'telemetry_1m',
    'SELECT f.*, f.minute AS bucket FROM folds f',
  )},${upsertBuckets('hours', 'telemetry_1h', 'SELECT * FROM closed_hours')},${upsertBuckets(
    'days',
    'telemetry_1d',
    'SELECT * FROM closed_days',
  )},
  -- Only a minute this batch creates: its row holds the fold's samples alone, where an updated one holds
  -- more. One it found was listed when it was created if it is pending at all, as the cutoff never goes
  -- back and every minute written before the first cutoff lies before it (migration 0405); probing the
  -- list for every fold cost a lookup per fold.
  listed AS (
    INSERT INTO telemetry_pending (device_id, capability, bucket_start, day_start, day_end)
    SELECT f.device_id, f.capability, f.minute, f.day_start, f.day_end
      FROM minutes m
      JOIN folds f ON f.device_id = m.device_id AND f.capability = m.capability AND f.minute = m.bucket_start
     WHERE f.pending AND m.samples = f.samples
  )
  ${staleCounters('minutes', '1m', `(extract(epoch FROM u.bucket_start) * 1000)::float8 + 60000`, '$23::text[]')}
  UNION ALL
  ${staleCounters('hours', '1h', endOf('closed_hours'), '$23::text[]')}
  UNION ALL
  ${staleCounters('days', '1d', endOf('closed_days'), '$23::text[]')}`,
);

/** A closed batch's folds of one resolution (RECORD_CLOSED_BATCH's $8-$21), as upsertBuckets reads them. */
const closedFolds = (resolution: StoredResolution) => `
  SELECT b.device_id, b.capability, ${EPOCH} + b.start_${resolution} * ${MS} AS bucket, b.samples, b.sum,
         b.min, b.max, ${EPOCH} + b.first_ms * ${MS} AS first_at, b.first_value,
         ${EPOCH} + b.last_ms * ${MS} AS last_at, b.last_value, b.increase
    FROM buckets b
   WHERE b.start_${resolution} IS NOT NULL`;

/**
 * A batch that closes every minute it holds (projector.ts: catching up): nothing to list, so its minute,
 * hour and day folds come as the batch fold made them ($8-$21: device, capability, start in each
 * resolution the fold stands for, else null, statistics; batch-fold.ts), with RECORD_BATCH's raw rows,
 * applied position and cutoff. Returns the stale counter buckets; a day's end is left to the caller.
 */
export const RECORD_CLOSED_BATCH = prepared(
  'telemetry.record-closed-batch',
  `
  WITH ${RAW_ROWS},
  buckets AS (
    SELECT *
      FROM unnest($8::text[], $9::text[], $10::int8[], $11::int8[], $12::int8[], $13::int4[], $14::float8[],
                  $15::float8[], $16::float8[], $17::int8[], $18::float8[], $19::int8[], $20::float8[],
                  $21::float8[])
           AS b(device_id, capability, start_1m, start_1h, start_1d, samples, sum, min, max, first_ms,
                first_value, last_ms, last_value, increase)
  ),
  ${APPLIED},${upsertBuckets('minutes', 'telemetry_1m', closedFolds('1m'))},${upsertBuckets(
    'hours',
    'telemetry_1h',
    closedFolds('1h'),
  )},${upsertBuckets('days', 'telemetry_1d', closedFolds('1d'))}
  ${staleCounters('minutes', '1m', `(extract(epoch FROM u.bucket_start) * 1000)::float8 + 60000`, '$23::text[]')}
  UNION ALL
  ${staleCounters('hours', '1h', `(extract(epoch FROM u.bucket_start) * 1000)::float8 + 3600000`, '$23::text[]')}
  UNION ALL
  ${staleCounters('days', '1d', 'NULL::float8', '$23::text[]')}`,
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

/**
 * The buckets of device $1 whose start is in [$3, $4), of the capabilities `capability` (a condition on
 * `b.capability`) picks, as a reader sees them: a 1m row as stored; an hour or a day as stored merged with
 * its minutes not yet rolled up (telemetry_pending). Those always follow what is stored of their bucket
 * (projector.ts, the rollup cutoff), so the merge chains them after it.
 */
const bucketsAsRead = (
  resolution: StoredResolution,
  capability: (alias: string) => string,
  pendingStarts: string | undefined,
) => {
  const table = BUCKET_TABLES[resolution];
  const stored = `
    SELECT b.capability, b.bucket_start, b.samples, b.sum, b.min, b.max, b.first_value, b.last_value, b.increase
      FROM ${table} b
     WHERE b.device_id = $1 AND ${capability('b')} AND b.bucket_start >= $3 AND b.bucket_start < $4`;
  if (resolution === '1m' || pendingStarts === undefined) return stored;
  return `
    SELECT coalesce(s.capability, p.capability) AS capability, coalesce(s.bucket_start, p.bucket) AS bucket_start,
           coalesce(s.samples, 0) + coalesce(p.samples, 0) AS samples,
           CASE WHEN s.bucket_start IS NULL THEN p.sum WHEN p.bucket IS NULL THEN s.sum ELSE s.sum + p.sum END AS sum,
           least(s.min, p.min) AS min, greatest(s.max, p.max) AS max,
           CASE WHEN s.bucket_start IS NULL THEN p.first_value ELSE s.first_value END AS first_value,
           CASE WHEN p.bucket IS NULL THEN s.last_value ELSE p.last_value END AS last_value,
           CASE WHEN p.bucket IS NULL THEN s.increase WHEN s.bucket_start IS NULL THEN p.increase
                ELSE s.increase + p.increase + ${rise('s.last_value', 'p.first_value')} END AS increase
      FROM (${stored}) s
      FULL JOIN (
        SELECT q.* FROM (${pendingFolded(resolution, capability, pendingStarts)}) q
         WHERE q.bucket >= $3 AND q.bucket < $4
      ) p ON p.capability = s.capability AND p.bucket = s.bucket_start`;
};

/**
 * The minutes of device $1 not yet rolled up, of the capabilities `capability` picks, per hour or day.
 * `pendingStarts` names the parameter that holds their starts (PENDING_STARTS, read first): with it the
 * planner keeps only the minute partitions they are in, where a join on the list alone planned every one
 * of them (a year of them in the bench: a 30-day query at 1h went from 3 to 15 ms).
 */
const pendingFolded = (
  resolution: '1h' | '1d',
  capability: (alias: string) => string,
  pendingStarts: string,
) =>
  minutesFolded(
    `SELECT p.device_id, p.capability, m.bucket_start AS minute, p.day_start, p.day_end, m.samples, m.sum,
            m.min, m.max, m.first_at, m.first_value, m.last_at, m.last_value, m.increase
       FROM telemetry_pending p
       JOIN telemetry_1m m
         ON m.device_id = p.device_id AND m.capability = p.capability AND m.bucket_start = p.bucket_start
        AND m.bucket_start = ANY (${pendingStarts}::timestamptz[])
      WHERE p.device_id = $1 AND ${capability('p')}`,
    resolution === '1h' ? HOUR_OF_MINUTE : DAY_OF_MINUTE,
  );

/** The starts of device $1's pending minutes of the capabilities $2: the pendingStarts of the reads below. */
export const PENDING_STARTS = prepared(
  'telemetry.pending-starts',
  `SELECT coalesce(array_agg(DISTINCT bucket_start), '{}') AS starts
     FROM telemetry_pending WHERE device_id = $1 AND capability = ANY ($2::text[])`,
);

const selectBuckets = (resolution: StoredResolution, pending: boolean) => `
  SELECT r.* FROM (${bucketsAsRead(resolution, (b) => `${b}.capability = ANY ($2::text[])`, pending ? '$5' : undefined)}) r
   ORDER BY r.capability, r.bucket_start`;

/**
 * A bucket's start as Date.prototype.toISOString writes it, so both paths write bucket times identically:
 * to_json's ISO 8601 form of the UTC time (whatever DateStyle says) without its closing quote, which the
 * caller writes after the milliseconds and the zone. Bucket starts are whole seconds (a UTC minute or hour,
 * a local midnight), so to_json never writes a fraction. to_char with the same format took about a third
 * more of the statement for a day of 1-minute points (docs/performance.md, "Telemetry queries: bucket
 * times written by to_json").
 */
const bucketStartJson = (column: string) => `left(to_json(${column} AT TIME ZONE 'UTC')::text, -1)`;

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
 * `{"capability_key":…,"bucket":`) comes written from Node rather than built per bucket. The sort and the
 * per-bucket prefix took about a quarter of the statement's time for a day of 1-minute points
 * (docs/performance.md, "Telemetry queries: points read per capability").
 */
const selectPointsJson = (resolution: StoredResolution, pending: boolean) => `
  SELECT coalesce(string_agg(c.points, ',' ORDER BY a.n), '') AS points
    FROM unnest($2::text[], $5::text[], $6::text[]) WITH ORDINALITY AS a(capability, aggregation, prefix, n)
    CROSS JOIN LATERAL (
      SELECT string_agg(
               a.prefix || ${bucketStartJson('b.bucket_start')} || '.000Z","value":'
                 || CASE WHEN p.value IS NULL OR p.value IN ('Infinity', '-Infinity', 'NaN')
                                         THEN 'null' ELSE p.value::text END
                 || ',"samples":' || b.samples || '}',
               ',' ORDER BY b.bucket_start) AS points
        FROM (${bucketsAsRead(resolution, (b) => `${b}.capability = a.capability`, pending ? '$7' : undefined)}) b
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
    ) c`;

/**
 * The last value of each capability's newest bucket before $3: the baseline of a window's first increase.
 * An hour's or a day's minutes not yet rolled up follow what is stored of it, so they win a tie.
 */
const selectPreviousLast = (resolution: StoredResolution, pending: boolean) => {
  const stored = `
    SELECT b.bucket_start AS bucket, b.last_value, 0 AS pending FROM ${BUCKET_TABLES[resolution]} b
     WHERE b.device_id = $1 AND b.capability = c.capability AND b.bucket_start < $3
     ORDER BY b.bucket_start DESC
     LIMIT 1`;
  const newest =
    resolution === '1m' || !pending
      ? stored
      : `SELECT z.* FROM ((${stored}) UNION ALL
           SELECT q.bucket, q.last_value, 1
             FROM (${pendingFolded(resolution, (p) => `${p}.capability = c.capability`, '$4')}) q
            WHERE q.bucket < $3) z
          ORDER BY z.bucket DESC, z.pending DESC
          LIMIT 1`;
  return `
  SELECT c.capability, p.last_value
    FROM unnest($2::text[]) AS c(capability)
    CROSS JOIN LATERAL (${newest}) p`;
};

const perTable = <T>(
  make: (table: string, resolution: StoredResolution) => T,
): Readonly<Record<StoredResolution, T>> => ({
  '1m': make(BUCKET_TABLES['1m'], '1m'),
  '1h': make(BUCKET_TABLES['1h'], '1h'),
  '1d': make(BUCKET_TABLES['1d'], '1d'),
});

export const RECOMPUTE_INCREASE = perTable(recomputeIncrease);
/**
 * Each read in two forms: of the stored rows alone, when the device has no pending minute of the
 * capabilities read (the plain statement plans and runs as fast as before the rollup), and merged with
 * them (their starts as the last parameter, PENDING_STARTS). A 1m read has one form.
 */
const readForms = <T>(make: (resolution: StoredResolution, pending: boolean) => T) => ({
  stored: perTable((_, resolution) => make(resolution, false)),
  withPending: perTable((_, resolution) => make(resolution, true)),
});

export const SELECT_BUCKETS = readForms(selectBuckets);
export const SELECT_PREVIOUS_LAST = readForms(selectPreviousLast);
// Run for every telemetry query: prepared, so each connection plans it once per resolution.
export const SELECT_POINTS_JSON = readForms((resolution, pending) =>
  prepared(
    `telemetry.points-json.${resolution}${pending ? '.with-pending' : ''}`,
    selectPointsJson(resolution, pending),
  ),
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
