import {
  resetAwareRise,
  UTC_BUCKET_MS,
  utcBucketStart,
  type LocalDay,
  type StoredResolution,
} from '../../domain/readings/index.js';
import { ByDeviceCapability } from '../by-device-capability.js';

/**
 * One numeric reading of a batch, in order of application (`n`). BatchFold.add keeps nothing of the object
 * itself, so a caller may hand it the same object each time with new values (the projector does: an object
 * per reading was a measurable share of its garbage).
 */
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
}

/** 0, 1, 2: the stored resolutions 1m, 1h and 1d, in the order a series keeps its folds. */
type Resolution = 0 | 1 | 2;

/**
 * One (device, capability) of a batch: per resolution the fold its latest reading went to and, once it has
 * a second bucket, all its folds by start (a series of live ingest nearly always has one, so no map).
 */
interface Series {
  readonly latest: [BucketFold | undefined, BucketFold | undefined, BucketFold | undefined];
  readonly byStart: [Map<number, BucketFold>?, Map<number, BucketFold>?, Map<number, BucketFold>?];
  day: LocalDay | undefined;
  /** A counter's readings, for its increases. */
  readonly counted: CounterReadings | undefined;
}

/**
 * A counter series' readings in order of arrival, as columns, each with the folds it went to (three per
 * reading: minute, hour, day). A bucket's increase is the rise between its neighbouring readings in filing
 * order; a bucket is a span of time, so its readings are neighbours in the series' filing order too, and
 * one walk over that order gives every bucket's increase. The order is arrival order unless a reading
 * arrived late, which `sorted` notes.
 */
class CounterReadings {
  readonly ms: number[] = [];
  readonly n: number[] = [];
  readonly values: number[] = [];
  readonly folds: BucketFold[] = [];
  sorted = true;

  push(ms: number, n: number, value: number, minute: BucketFold, hour: BucketFold, day: BucketFold): void {
    const last = this.ms.length - 1;
    // n rises with arrival, so only an earlier filing time breaks the order.
    if (last >= 0 && ms < this.ms[last]!) this.sorted = false;
    this.ms.push(ms);
    this.n.push(n);
    this.values.push(value);
    this.folds.push(minute, hour, day);
  }

  /** Adds each rise between neighbours in filing order to the folds both went to. */
  addIncreases(): void {
    const order = this.sorted ? undefined : this.#filingOrder();
    for (let j = 1; j < this.values.length; j++) {
      const previous = order ? order[j - 1]! : j - 1;
      const current = order ? order[j]! : j;
      const rise = resetAwareRise(this.values[previous]!, this.values[current]!);
      for (let k = 0; k < 3; k++) {
        const fold = this.folds[3 * current + k]!;
        if (fold === this.folds[3 * previous + k]) fold.increase! += rise;
      }
    }
  }

  #filingOrder(): number[] {
    return this.ms.map((_, i) => i).sort((a, b) => this.ms[a]! - this.ms[b]! || this.n[a]! - this.n[b]!);
  }
}

const before = (ms: number, n: number, thanMs: number, thanN: number) =>
  ms < thanMs || (ms === thanMs && n < thanN);

/**
 * Merges a batch's readings into one fold per (resolution, device, capability, bucket) in memory, so each
 * bucket is upserted once per batch whatever the number of its readings; a minute's fold stands for its
 * hour's and day's when they hold the same readings (`start1h`, `start1d`). `dayOf` gives the local day of
 * an instant in a zone (remembered per series, as a device's readings mostly share a day).
 */
export class BatchFold {
  readonly #series = new ByDeviceCapability<Series>();
  readonly #folds: BucketFold[] = [];
  readonly #dayOf: (ms: number, zone: string) => LocalDay;

  constructor(dayOf: (ms: number, zone: string) => LocalDay) {
    this.#dayOf = dayOf;
  }

  /** Folds one reading in; readings come in order of application. */
  add(r: FoldedReading): void {
    const ofDevice = this.#series.of(r.deviceId);
    let s = ofDevice.get(r.capability);
    if (!s) {
      s = {
        latest: [undefined, undefined, undefined],
        byStart: [],
        day: undefined,
        counted: r.counter ? new CounterReadings() : undefined,
      };
      ofDevice.set(r.capability, s);
    }
    if (!s.day || r.filedMs < s.day.start || r.filedMs >= s.day.end) s.day = this.#dayOf(r.filedMs, r.zone);
    const minute = this.#foldInto(s, 0, utcBucketStart(r.filedMs, UTC_BUCKET_MS['1m']), r);
    const hour = this.#foldInto(s, 1, utcBucketStart(r.filedMs, UTC_BUCKET_MS['1h']), r);
    const day = this.#foldInto(s, 2, s.day.start, r);
    s.counted?.push(r.filedMs, r.n, r.number, minute, hour, day);
  }

  /** The folds to store, once every reading is in. */
  folds(): BucketFold[] {
    const sharedHoursAndDays = new Set<BucketFold>();
    for (const s of this.#series.values()) {
      s.counted?.addIncreases();
      // One fold in each resolution: they hold the same readings.
      if (s.byStart[0] || s.byStart[1] || s.byStart[2]) continue;
      const [minute, hour, day] = s.latest as [BucketFold, BucketFold, BucketFold];
      minute.start1h = hour.start1h;
      minute.start1d = day.start1d;
      sharedHoursAndDays.add(hour).add(day);
    }
    return sharedHoursAndDays.size === 0
      ? this.#folds
      : this.#folds.filter((fold) => !sharedHoursAndDays.has(fold));
  }

  #foldInto(s: Series, resolution: Resolution, startMs: number, r: FoldedReading): BucketFold {
    const latest = s.latest[resolution];
    let fold = latest && startOf(latest, resolution) === startMs ? latest : undefined;
    if (!fold && latest) {
      let byStart = s.byStart[resolution];
      if (!byStart) {
        byStart = new Map([[startOf(latest, resolution), latest]]);
        s.byStart[resolution] = byStart;
      }
      fold = byStart.get(startMs);
    }
    if (fold) merge(fold, r);
    else {
      fold = created(resolution, startMs, r);
      s.byStart[resolution]?.set(startMs, fold);
      this.#folds.push(fold);
    }
    s.latest[resolution] = fold;
    return fold;
  }
}

function startOf(fold: BucketFold, resolution: Resolution): number {
  return (resolution === 0 ? fold.start1m : resolution === 1 ? fold.start1h : fold.start1d)!;
}

function created(resolution: Resolution, startMs: number, r: FoldedReading): BucketFold {
  return {
    start1m: resolution === 0 ? startMs : null,
    start1h: resolution === 1 ? startMs : null,
    start1d: resolution === 2 ? startMs : null,
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
    increase: r.counter ? 0 : null,
  };
}

function merge(fold: BucketFold, r: FoldedReading): void {
  fold.samples += 1;
  fold.sum += r.number;
  if (r.number < fold.min) fold.min = r.number;
  if (r.number > fold.max) fold.max = r.number;
  if (before(r.filedMs, r.n, fold.firstMs, fold.firstN)) {
    fold.firstMs = r.filedMs;
    fold.firstN = r.n;
    fold.firstValue = r.number;
  }
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
