import { findCapability } from '../../domain/catalogue/index.js';
import {
  UTC_BUCKET_MS,
  mergeBuckets,
  pointValue,
  servedAggregation,
  utcBucketStart,
  type BucketResolution,
  type TelemetryAggregation,
} from '../../domain/readings/index.js';
import type { Pool } from '../../infra/postgres/pool.js';
import {
  readBuckets,
  readPointsJson,
  readPreviousLast,
  readRawReadings,
  type StoredBucket,
} from '../../projections/telemetry/queries.js';

/** Raw answers stop after this many points and say where to continue (`nextFrom`). */
export const RAW_POINT_LIMIT = 10_000;

interface BucketPoint {
  capability_key: string;
  bucket: string;
  value: number;
  samples: number;
}

export interface RawPoint {
  capability_key: string;
  time: string;
  value: number | boolean | string;
  device_time: string | null;
  server_time: string;
}

interface Window {
  readonly deviceId: string;
  readonly capabilities: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
}

/**
 * Bucketed points of each capability, capability by capability in the order given, oldest bucket first, as
 * the JSON text of the points array: the response passes it through as it is. Only buckets holding readings
 * exist, so an empty bucket is simply absent. `aggregations` holds what was served for each capability.
 */
export async function bucketPointsJson(
  pool: Pool,
  window: Window,
  resolution: BucketResolution,
  aggregations: ReadonlyMap<string, TelemetryAggregation>,
): Promise<string> {
  const increase = [...aggregations.values()].includes('increase');
  if (resolution === '5m' || increase) {
    return JSON.stringify(await pointsFromStats(pool, window, resolution, aggregations));
  }
  // The common case: stored buckets, points built by the database.
  const items = await readPointsJson(pool, {
    deviceId: window.deviceId,
    resolution,
    from: new Date(window.fromMs),
    to: new Date(window.toMs),
    served: aggregations as ReadonlyMap<string, Exclude<TelemetryAggregation, 'increase'>>,
  });
  return `[${items}]`;
}

/** 5-minute buckets and increase: whole bucket statistics, combined here. */
async function pointsFromStats(
  pool: Pool,
  window: Window,
  resolution: BucketResolution,
  aggregations: ReadonlyMap<string, TelemetryAggregation>,
): Promise<BucketPoint[]> {
  // 5m is served from 1m: the window's 5-minute buckets are those starting in [from, to), made whole.
  const stored = resolution === '5m' ? '1m' : resolution;
  const align = (ms: number) =>
    resolution === '5m' ? utcBucketStart(ms + UTC_BUCKET_MS['5m'] - 1, UTC_BUCKET_MS['5m']) : ms;
  const from = new Date(align(window.fromMs));
  const to = new Date(align(window.toMs));
  const query = { deviceId: window.deviceId, capabilities: window.capabilities, resolution: stored };
  const [rows, previous] = await Promise.all([
    readBuckets(pool, { ...query, from, to }),
    [...aggregations.values()].includes('increase')
      ? readPreviousLast(pool, { ...query, before: from })
      : Promise.resolve(new Map<string, number>()),
  ]);
  const byCapability = new Map<string, StoredBucket[]>();
  for (const row of resolution === '5m' ? rollUp(rows, UTC_BUCKET_MS['5m']) : rows) {
    const list = byCapability.get(row.capability) ?? [];
    list.push(row);
    byCapability.set(row.capability, list);
  }
  const points: BucketPoint[] = [];
  for (const capability of window.capabilities) {
    const aggregation = aggregations.get(capability);
    if (aggregation === undefined) continue;
    let previousLast = previous.get(capability);
    for (const bucket of byCapability.get(capability) ?? []) {
      points.push({
        capability_key: capability,
        bucket: bucket.start.toISOString(),
        value: pointValue(bucket, aggregation, previousLast),
        samples: bucket.samples,
      });
      previousLast = bucket.last;
    }
  }
  return points;
}

/** Groups consecutive buckets of one capability (rows come by capability, then start) into wider ones. */
function rollUp(rows: readonly StoredBucket[], widthMs: number): StoredBucket[] {
  const out: StoredBucket[] = [];
  let group: StoredBucket[] = [];
  const close = () => {
    const head = group[0];
    if (head) {
      out.push({
        ...mergeBuckets(group),
        capability: head.capability,
        start: new Date(utcBucketStart(head.start.getTime(), widthMs)),
      });
    }
    group = [];
  };
  for (const row of rows) {
    const head = group[0];
    if (
      head &&
      (head.capability !== row.capability ||
        utcBucketStart(head.start.getTime(), widthMs) !== utcBucketStart(row.start.getTime(), widthMs))
    ) {
      close();
    }
    group.push(row);
  }
  close();
  return out;
}

/**
 * Raw readings filed in [from, to), oldest first. Past RAW_POINT_LIMIT the answer ends before the first
 * time it could not include whole, and `nextFrom` is that time: ask again from there.
 */
export async function rawPoints(
  pool: Pool,
  window: Window,
): Promise<{ points: RawPoint[]; nextFrom: string | undefined }> {
  const rows = await readRawReadings(pool, {
    deviceId: window.deviceId,
    capabilities: window.capabilities,
    from: new Date(window.fromMs),
    to: new Date(window.toMs),
    limit: RAW_POINT_LIMIT + 1,
  });
  let kept = rows;
  let nextMs: number | undefined;
  const cut = rows[RAW_POINT_LIMIT];
  if (cut) {
    nextMs = cut.filedAt.getTime();
    kept = rows.slice(0, RAW_POINT_LIMIT).filter((r) => r.filedAt.getTime() < nextMs!);
    if (kept.length === 0) {
      // More than the limit filed at one instant (not seen in practice): serve the limit and move past it.
      kept = rows.slice(0, RAW_POINT_LIMIT);
      nextMs += 1;
    }
  }
  const nextFrom = nextMs === undefined ? undefined : new Date(nextMs).toISOString();
  return {
    points: kept.map((r) => ({
      capability_key: r.capability,
      time: r.filedAt.toISOString(),
      value: r.value,
      device_time: r.deviceTime?.toISOString() ?? null,
      server_time: r.serverTime.toISOString(),
    })),
    nextFrom,
  };
}

/** What each capability is served with; capabilities without a bucketed form (text) are left out. */
export function servedAggregations(
  capabilities: readonly string[],
  requested: TelemetryAggregation,
): Map<string, TelemetryAggregation> {
  const served = new Map<string, TelemetryAggregation>();
  for (const key of capabilities) {
    const capability = findCapability(key);
    const aggregation = capability && servedAggregation(capability, requested);
    if (aggregation) served.set(key, aggregation);
  }
  return served;
}
