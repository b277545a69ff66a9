import {
  riseAlong,
  UTC_BUCKET_MS,
  utcBucketStart,
  type LocalDay,
  type StoredResolution,
} from '../../domain/readings/index.js';
import { ByDeviceCapability } from '../by-device-capability.js';

/** One numeric reading of a batch, in order of application (`n`). */
export interface FoldedReading {
  readonly deviceId: string;
  readonly capability: string;
  readonly filedMs: number;
  readonly n: number;
  readonly number: number;
  readonly counter: boolean;
  /** The timezone its 1d bucket follows. */
  readonly zone: string;
}

/**
 * A batch's readings of one bucket (or of a minute and its hour and day), reduced to what the stored row
 * merges with: the same statistics the bucket table keeps. first/last follow filing time, then order of
 * application; `increase` is the reset-aware rise along the bucket's readings in that order (counters only,
 * else null).
 *
 * `start1m`, `start1h` and `start1d` hold the bucket's start in each resolution it stands for, else null.
 * When a series' readings of the batch all fall in one minute, as they nearly always do in live ingest (a
 * batch spans a fraction of a second), its minute, hour and day hold the same readings, so one fold stands
 * for all three: a third of the rows to write out and for PostgreSQL to read in.
 */
export interface BucketFold {
  readonly start1m: number | null;
  start1h: number | null;
  start1d: number | null;
  readonly deviceId: string;
  readonly capability: string;
  samples: number;
  sum: number;
  min: number;
  max: number;
  firstMs: number;
  firstN: number;
  firstValue: number;
  lastMs: number;
  lastN: number;
  lastValue: number;
  increase: number | null;
  /** A counter's readings, for its rise once sorted (they nearly always arrive sorted already). */
  readings: FoldedReading[] | undefined;
}

interface Series {
  readonly buckets: [Map<number, BucketFold>, Map<number, BucketFold>, Map<number, BucketFold>];
  day: LocalDay | undefined;
}

const before = (ms: number, n: number, thanMs: number, thanN: number) =>
  ms < thanMs || (ms === thanMs && n < thanN);

/**
 * Merges a batch's readings into one fold per (resolution, device, capability, bucket) in memory, so each
 * bucket is upserted once per batch whatever the number of its readings; a minute's fold stands for its
 * hour's and day's when they hold the same readings (`start1h`, `start1d`). `dayOf` gives the local day of
 * an instant in a zone (remembered per series, as a device's readings mostly share a day).
 */
export function foldBatch(
  readings: readonly FoldedReading[],
  dayOf: (ms: number, zone: string) => LocalDay,
): BucketFold[] {
  const series = new ByDeviceCapability<Series>();
  const result: BucketFold[] = [];
  for (const r of readings) {
    const ofDevice = series.of(r.deviceId);
    let s = ofDevice.get(r.capability);
    if (!s) {
      s = { buckets: [new Map(), new Map(), new Map()], day: undefined };
      ofDevice.set(r.capability, s);
    }
    if (!s.day || r.filedMs < s.day.start || r.filedMs >= s.day.end) s.day = dayOf(r.filedMs, r.zone);
    add(s.buckets[0], '1m', utcBucketStart(r.filedMs, UTC_BUCKET_MS['1m']), r, result);
    add(s.buckets[1], '1h', utcBucketStart(r.filedMs, UTC_BUCKET_MS['1h']), r, result);
    add(s.buckets[2], '1d', s.day.start, r, result);
  }
  const sharedHoursAndDays = new Set<BucketFold>();
  for (const { buckets } of series.values()) {
    if (buckets[0].size !== 1 || buckets[1].size !== 1 || buckets[2].size !== 1) continue;
    const [minute, hour, day] = buckets.map((b) => b.values().next().value!) as [
      BucketFold,
      BucketFold,
      BucketFold,
    ];
    minute.start1h = hour.start1h;
    minute.start1d = day.start1d;
    sharedHoursAndDays.add(hour).add(day);
  }
  const folds =
    sharedHoursAndDays.size === 0 ? result : result.filter((fold) => !sharedHoursAndDays.has(fold));
  for (const fold of folds) {
    if (!fold.readings) continue;
    fold.increase = riseAlong(
      fold.readings.sort((a, b) => a.filedMs - b.filedMs || a.n - b.n).map((r) => r.number),
    );
    fold.readings = undefined;
  }
  return folds;
}

function add(
  buckets: Map<number, BucketFold>,
  resolution: StoredResolution,
  startMs: number,
  r: FoldedReading,
  result: BucketFold[],
): void {
  const fold = buckets.get(startMs);
  if (!fold) {
    const created: BucketFold = {
      start1m: resolution === '1m' ? startMs : null,
      start1h: resolution === '1h' ? startMs : null,
      start1d: resolution === '1d' ? startMs : null,
      deviceId: r.deviceId,
      capability: r.capability,
      samples: 1,
      sum: r.number,
      min: r.number,
      max: r.number,
      firstMs: r.filedMs,
      firstN: r.n,
      firstValue: r.number,
      lastMs: r.filedMs,
      lastN: r.n,
      lastValue: r.number,
      increase: null,
      readings: r.counter ? [r] : undefined,
    };
    buckets.set(startMs, created);
    result.push(created);
    return;
  }
  fold.samples += 1;
  fold.sum += r.number;
  if (r.number < fold.min) fold.min = r.number;
  if (r.number > fold.max) fold.max = r.number;
  if (before(r.filedMs, r.n, fold.firstMs, fold.firstN)) {
    fold.firstMs = r.filedMs;
    fold.firstN = r.n;
    fold.firstValue = r.number;
  }
  fold.readings?.push(r);
  if (!before(r.filedMs, r.n, fold.lastMs, fold.lastN)) {
    fold.lastMs = r.filedMs;
    fold.lastN = r.n;
    fold.lastValue = r.number;
  }
}

/** The fold's bucket start in a resolution, or null when it does not stand for a bucket of it. */
export function startIn(fold: BucketFold, resolution: StoredResolution): number | null {
  return resolution === '1m' ? fold.start1m : resolution === '1h' ? fold.start1h : fold.start1d;
}
