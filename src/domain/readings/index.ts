export {
  ReadingsRecorded,
  readingsEvents,
  readingsStreamName,
  type ReadingsEvent,
  type ReadingsRecordedData,
  type RecordedReading,
} from './events.js';
export {
  screenReadings,
  type ReadingRefusalReason,
  type RefusedReading,
  type ScreenedReadings,
} from './validation.js';
export {
  BACKFILL_LIMIT_MS,
  CLOCK_SKEW_TOLERANCE_MS,
  FUTURE_TOLERANCE_MS,
  filedAt,
  isClockSkewed,
} from './timing.js';
export { QUALITY_MARKERS, qualityOf, type QualityInput, type QualityMarker } from './quality.js';
export { DAY_MS, epochDay, localDayOf, startOfLocalDay, utcOffset, type LocalDay } from './local-day.js';
export {
  MAX_WINDOW_MS,
  RESOLUTIONS,
  STORED_RESOLUTIONS,
  UTC_BUCKET_MS,
  bucketStart,
  utcBucketStart,
  windowProblem,
  type BucketResolution,
  type Resolution,
  type StoredResolution,
  type WindowProblem,
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
