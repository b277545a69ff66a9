export {
  ReadingsRecorded,
  readingsStreamName,
  type ReadingsRecordedData,
  type RecordedReading,
} from './events.js';
export { screenReadings, type RefusedReading } from './validation.js';
export { BACKFILL_LIMIT_MS, FUTURE_TOLERANCE_MS, filedAt } from './timing.js';
export { QUALITY_MARKERS, qualityOf } from './quality.js';
export { localDayOf, startOfLocalDay, type LocalDay } from './local-day.js';
export {
  MAX_WINDOW_MS,
  RESOLUTIONS,
  UTC_BUCKET_MS,
  bucketStart,
  utcBucketStart,
  windowProblem,
  type BucketResolution,
  type Resolution,
  type StoredResolution,
} from './buckets.js';
export {
  TELEMETRY_AGGREGATIONS,
  isCounter,
  mergeBuckets,
  pointValue,
  resetAwareRise,
  riseAlong,
  servedAggregation,
  type BucketStats,
  type TelemetryAggregation,
} from './aggregation.js';
