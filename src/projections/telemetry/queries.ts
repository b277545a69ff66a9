import type { BucketStats, StoredResolution, TelemetryAggregation } from '../../domain/readings/index.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { bind } from '../../infra/postgres/prepared.js';
import { SELECT_BUCKETS, SELECT_POINTS_JSON, SELECT_PREVIOUS_LAST, SELECT_RAW } from './sql.js';

export interface StoredBucket extends BucketStats {
  readonly capability: string;
  readonly start: Date;
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
  const { rows } = await pool.query<{
    capability: string;
    bucket_start: Date;
    samples: number;
    sum: number;
    min: number;
    max: number;
    first_value: number;
    last_value: number;
    increase: number | null;
  }>(SELECT_BUCKETS[query.resolution], [query.deviceId, query.capabilities, query.from, query.to]);
  return rows.map((r) => ({
    capability: r.capability,
    start: r.bucket_start,
    samples: r.samples,
    sum: r.sum,
    min: r.min,
    max: r.max,
    first: r.first_value,
    last: r.last_value,
    increase: r.increase,
  }));
}

/** Per capability, the last value of the newest bucket that starts before `before` (where there is one). */
export async function readPreviousLast(
  pool: Pool,
  query: Omit<BucketQuery, 'from' | 'to'> & { readonly before: Date },
): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ capability: string; last_value: number }>(
    SELECT_PREVIOUS_LAST[query.resolution],
    [query.deviceId, query.capabilities, query.before],
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
  return rows.map((r) => ({
    capability: r.capability,
    filedAt: r.filed_at,
    value: r.value,
    deviceTime: r.device_time,
    serverTime: r.server_time,
  }));
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
  const { rows } = await pool.query<{ points: string }>(
    bind(SELECT_POINTS_JSON[query.resolution], [
      query.deviceId,
      [...query.served.keys()],
      query.from,
      query.to,
      [...query.served.values()],
      [...query.served.keys()].map((key) => `{"capability_key":${JSON.stringify(key)},"bucket":"`),
    ]),
  );
  return rows[0]!.points;
}
