import { DAY_MS, HOUR_MS, MINUTE_MS } from '../time.js';
import { startOfLocalDay } from './local-day.js';

/**
 * Telemetry resolutions and where their buckets start. 1m, 5m and 1h buckets are aligned to UTC (in a
 * zone with a half-hour offset an hour bucket runs from :30 to :30 local time); 1d buckets start at
 * midnight in the site's timezone, so a DST day is a 23- or 25-hour bucket.
 */
export const RESOLUTIONS = ['raw', '1m', '5m', '1h', '1d'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];
export type BucketResolution = Exclude<Resolution, 'raw'>;
/** The resolutions kept as tables; 5m is rolled up from 1m when asked for. */
export type StoredResolution = '1m' | '1h' | '1d';

export const UTC_BUCKET_MS: Readonly<Record<Exclude<BucketResolution, '1d'>, number>> = {
  '1m': MINUTE_MS,
  '5m': 5 * MINUTE_MS,
  '1h': HOUR_MS,
};

/** The widest window one query may ask for at each resolution. */
export const MAX_WINDOW_MS: Readonly<Record<Resolution, number>> = {
  raw: DAY_MS,
  '1m': 7 * DAY_MS,
  '5m': 31 * DAY_MS,
  '1h': 400 * DAY_MS,
  '1d': 3660 * DAY_MS,
};

export function utcBucketStart(ms: number, widthMs: number): number {
  return ms - (((ms % widthMs) + widthMs) % widthMs);
}

/** Start of the bucket of `resolution` holding the instant `ms`; `timezone` matters only for 1d. */
export function bucketStart(resolution: BucketResolution, ms: number, timezone: string): number {
  return resolution === '1d' ? startOfLocalDay(ms, timezone) : utcBucketStart(ms, UTC_BUCKET_MS[resolution]);
}

export type WindowProblem = 'from_after_to' | 'window_too_large';

/** `from` is inclusive and `to` exclusive; an empty window (from = to) is allowed and has no points. */
export function windowProblem(
  resolution: Resolution,
  fromMs: number,
  toMs: number,
): WindowProblem | undefined {
  if (fromMs > toMs) return 'from_after_to';
  if (toMs - fromMs > MAX_WINDOW_MS[resolution]) return 'window_too_large';
  return undefined;
}
