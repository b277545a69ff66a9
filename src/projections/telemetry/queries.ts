import type { BucketStats, StoredResolution, TelemetryAggregation } from '../../domain/readings/index.js';
import { camelCased } from '../../infra/postgres/camel-cased.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { bind } from '../../infra/postgres/prepared.js';
import {
  PENDING_STARTS,
  SELECT_BUCKETS,
  SELECT_POINTS_JSON,
  SELECT_PREVIOUS_LAST,
  SELECT_RAW,
} from './sql.js';

/**
 * Which form of a read to run (sql.ts, readForms) and its extra parameter: for an hour or a day with
 * minutes not yet rolled up, their starts. A minute that becomes pending between the two statements is
 * left out of its hour as if read a moment earlier; one rolled up meanwhile is read in its hour.
 */
async function pendingStarts(
  pool: Pool,
  query: {
    readonly deviceId: string;
    readonly capabilities: readonly string[];
    readonly resolution: StoredResolution;
  },
): Promise<{ form: 'stored' | 'withPending'; extra: unknown[] }> {
  if (query.resolution === '1m') return { form: 'stored', extra: [] };
  const { rows } = await pool.query<{ starts: Date[] }>(
    bind(PENDING_STARTS, [query.deviceId, query.capabilities]),
  );
  const starts = rows[0]!.starts;
  return starts.length === 0 ? { form: 'stored', extra: [] } : { form: 'withPending', extra: [starts] };
}

export interface StoredBucket extends BucketStats {
  readonly capability: string;
  readonly start: Date;
}

/** A row of a bucket table (telemetry_1m, telemetry_1h, telemetry_1d), without its device. */
export interface BucketRow {
  capability: string;
  bucket_start: Date;
  samples: number;
  sum: number;
  min: number;
  max: number;
  first_value: number;
  last_value: number;
  increase: number | null;
}

/** What a bucket row says of its readings. */
export function bucketStats(row: BucketRow): BucketStats {
  return {
    samples: row.samples,
    sum: row.sum,
    min: row.min,
    max: row.max,
    first: row.first_value,
    last: row.last_value,
    increase: row.increase,
  };
}

export interface BucketQuery {
  readonly deviceId: string;
  readonly capabilities: readonly string[];
  readonly resolution: StoredResolution;
  /** Buckets whose start is in [from, to). */
  readonly from: Date;
  readonly to: Date;
}

/** Stored buckets of one device, by capability then start. */
export async function readBuckets(pool: Pool, query: BucketQuery): Promise<StoredBucket[]> {
  const pending = await pendingStarts(pool, query);
  const { rows } = await pool.query<BucketRow>(SELECT_BUCKETS[pending.form][query.resolution], [
    query.deviceId,
    query.capabilities,
    query.from,
    query.to,
    ...pending.extra,
  ]);
  return rows.map((r) => ({ capability: r.capability, start: r.bucket_start, ...bucketStats(r) }));
}

/** Per capability, the last value of the newest bucket that starts before `before` (where there is one). */
export async function readPreviousLast(
  pool: Pool,
  query: Omit<BucketQuery, 'from' | 'to'> & { readonly before: Date },
): Promise<Map<string, number>> {
  const pending = await pendingStarts(pool, query);
  const { rows } = await pool.query<{ capability: string; last_value: number }>(
    SELECT_PREVIOUS_LAST[pending.form][query.resolution],
    [query.deviceId, query.capabilities, query.before, ...pending.extra],
  );
  return new Map(rows.map((r) => [r.capability, r.last_value]));
}

export interface RawReadingRow {
  readonly capability: string;
  readonly filedAt: Date;
  readonly value: number | boolean | string;
  readonly deviceTime: Date | null;
  readonly serverTime: Date;
}

/** Raw readings filed in [from, to), oldest first, at most `limit`. */
export async function readRawReadings(
  pool: Pool,
  query: Omit<BucketQuery, 'resolution'> & { readonly limit: number },
): Promise<RawReadingRow[]> {
  const { rows } = await pool.query<{
    capability: string;
    filed_at: Date;
    value: number | boolean | string;
    device_time: Date | null;
    server_time: Date;
  }>(SELECT_RAW, [query.deviceId, query.capabilities, query.from, query.to, query.limit]);
  return rows.map(camelCased);
}

/**
 * The points of each served capability, in the order of `served`, then by bucket start, as the text of a
 * JSON array's items (empty when there are none): `{"capability_key","bucket","value","samples"}` each,
 * built by the database. For every function but increase (which needs the bucket before the window).
 */
export async function readPointsJson(
  pool: Pool,
  query: Omit<BucketQuery, 'capabilities'> & {
    readonly served: ReadonlyMap<string, Exclude<TelemetryAggregation, 'increase'>>;
  },
): Promise<string> {
  const pending = await pendingStarts(pool, { ...query, capabilities: [...query.served.keys()] });
  const { rows } = await pool.query<{ points: string }>(
    bind(SELECT_POINTS_JSON[pending.form][query.resolution], [
      query.deviceId,
      [...query.served.keys()],
      query.from,
      query.to,
      [...query.served.values()],
      [...query.served.keys()].map((key) => `{"capability_key":${JSON.stringify(key)},"bucket":`),
      ...pending.extra,
    ]),
  );
  return rows[0]!.points;
}
