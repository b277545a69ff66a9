import { expect } from 'chai';
import { riseAlong, utcBucketStart } from '../../src/domain/readings/index.js';
import {
  BatchFold,
  startIn,
  type BucketFold,
  type FoldedReading,
} from '../../src/projections/telemetry/batch-fold.js';
import { LocalDays } from '../../src/projections/telemetry/local-days.js';

const days = new LocalDays();
const dayOf = (ms: number, zone: string) => days.of(ms, zone);

function foldBatch(readings: readonly FoldedReading[], of = dayOf): BucketFold[] {
  const fold = new BatchFold(of);
  for (const r of readings) fold.add(r);
  return fold.folds();
}
const at = (iso: string) => Date.parse(iso);

let n = 0;
const reading = (filedAt: string, number: number, more: Partial<FoldedReading> = {}): FoldedReading => ({
  deviceId: 'dev_a',
  capability: 'environment.temperature',
  filedMs: at(filedAt),
  n: n++,
  number,
  counter: false,
  zone: 'Europe/Berlin',
  ...more,
});

const startsOf = (fold: BucketFold) => [fold.start1m, fold.start1h, fold.start1d];
const standsFor = (fold: BucketFold) => startsOf(fold).filter((start) => start !== null).length;

describe("telemetry batch folds: a minute's fold stands for its hour and day when they hold the same readings", () => {
  it('gives a series whose readings share a minute one fold with its start in all three resolutions', () => {
    const folds = foldBatch(
      [
        reading('2026-11-28T10:15:01Z', 20),
        reading('2026-11-28T10:15:31Z', 22),
        reading('2026-11-28T10:15:59Z', 21),
      ],
      dayOf,
    );
    expect(folds).to.have.length(1);
    expect(folds[0]).to.deep.include({
      start1m: at('2026-11-28T10:15:00Z'),
      start1h: at('2026-11-28T10:00:00Z'),
      start1d: at('2026-11-27T23:00:00Z'), // midnight in Berlin
      samples: 3,
      sum: 63,
      min: 20,
      max: 22,
      firstValue: 20,
      lastValue: 21,
    });
  });

  it("keeps a shared counter's first, last and increase in filing order when its readings arrive out of it", () => {
    const counter = { counter: true, capability: 'electrical.energy_import' };
    const folds = foldBatch(
      [
        reading('2026-11-28T10:15:30Z', 105, counter),
        reading('2026-11-28T10:15:10Z', 100, counter),
        reading('2026-11-28T10:15:50Z', 3, counter), // a reset
      ],
      dayOf,
    );
    expect(folds).to.have.length(1);
    expect(standsFor(folds[0]!)).to.equal(3);
    // Filing order 100, 105, 3: a rise of 5, then 3 after the reset.
    expect(folds[0]).to.deep.include({ firstValue: 100, lastValue: 3, increase: 8, samples: 3 });
  });

  it('folds each resolution on its own once the readings span two minutes', () => {
    const folds = foldBatch(
      [reading('2026-11-28T10:15:59Z', 20), reading('2026-11-28T10:16:00Z', 24)],
      dayOf,
    );
    expect(folds.every((f) => standsFor(f) === 1)).to.equal(true);
    expect(folds.filter((f) => f.start1m !== null).map((f) => [f.start1m, f.samples])).to.deep.equal([
      [at('2026-11-28T10:15:00Z'), 1],
      [at('2026-11-28T10:16:00Z'), 1],
    ]);
    expect(folds.filter((f) => f.start1h !== null).map((f) => [f.start1h, f.samples, f.sum])).to.deep.equal([
      [at('2026-11-28T10:00:00Z'), 2, 44],
    ]);
    expect(folds.filter((f) => f.start1d !== null).map((f) => [f.start1d, f.samples, f.sum])).to.deep.equal([
      [at('2026-11-27T23:00:00Z'), 2, 44],
    ]);
  });

  it("shares per series: one capability's two minutes do not split the same device's other capability", () => {
    const counter = { counter: true, capability: 'electrical.energy_import' };
    const folds = foldBatch(
      [
        reading('2026-11-28T10:15:59Z', 1, counter),
        reading('2026-11-28T10:15:10Z', 5),
        reading('2026-11-28T10:16:00Z', 3, counter),
      ],
      dayOf,
    );
    const temperature = folds.filter((f) => f.capability === 'environment.temperature');
    expect(temperature).to.have.length(1);
    expect(standsFor(temperature[0]!)).to.equal(3);
    // The counter's hour holds both minutes: its increase runs across them (1 → 3).
    const counterHour = folds.find((f) => f.capability === counter.capability && f.start1h !== null);
    expect(counterHour).to.deep.include({ samples: 2, increase: 2, start1m: null });
  });
});

/**
 * The straightforward fold the optimised one must equal: per resolution, each bucket's readings gathered,
 * sorted by filing time then order of application, and reduced from scratch.
 */
function referenceFolds(readings: readonly FoldedReading[]) {
  const buckets = new Map<string, FoldedReading[]>();
  for (const r of readings) {
    const starts = {
      '1m': utcBucketStart(r.filedMs, 60_000),
      '1h': utcBucketStart(r.filedMs, 3_600_000),
      '1d': days.of(r.filedMs, r.zone).start,
    };
    for (const [resolution, start] of Object.entries(starts)) {
      const key = `${resolution} ${r.deviceId} ${r.capability} ${start}`;
      buckets.set(key, [...(buckets.get(key) ?? []), r]);
    }
  }
  const rows = new Map<string, unknown>();
  for (const [key, of] of buckets) {
    const sorted = [...of].sort((a, b) => a.filedMs - b.filedMs || a.n - b.n);
    rows.set(key, {
      samples: sorted.length,
      sum: of.reduce((total, r) => total + r.number, 0),
      min: Math.min(...of.map((r) => r.number)),
      max: Math.max(...of.map((r) => r.number)),
      firstValue: sorted[0]!.number,
      lastValue: sorted.at(-1)!.number,
      increase: of[0]!.counter ? riseAlong(sorted.map((r) => r.number)) : null,
    });
  }
  return rows;
}

/** The optimised folds keyed as the reference's, one row per resolution a fold stands for. */
function foldRows(folds: readonly BucketFold[]) {
  const rows = new Map<string, unknown>();
  for (const f of folds) {
    for (const resolution of ['1m', '1h', '1d'] as const) {
      const start = startIn(f, resolution);
      if (start === null) continue;
      const key = `${resolution} ${f.deviceId} ${f.capability} ${start}`;
      expect(rows.has(key), `${key} folded twice`).to.equal(false);
      const { samples, sum, min, max, firstValue, lastValue, increase } = f;
      rows.set(key, { samples, sum, min, max, firstValue, lastValue, increase });
    }
  }
  return rows;
}

describe('telemetry batch folds against a reference fold', () => {
  it('equals the reference over random batches: late readings, counter resets, several buckets and zones', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let sawLate = 0;
    let sawMultiMinute = 0;
    for (let batch = 0; batch < 200; batch++) {
      const readings: FoldedReading[] = [];
      // Some batches span a few seconds (live ingest), some hours and a local midnight (a catch-up).
      const spanMs = random() < 0.5 ? 5_000 : 30 * 3_600_000;
      const startMs = Date.parse('2026-11-28T20:00:00Z') + Math.floor(random() * 3_600_000);
      const counters = new Map<string, number>();
      let latest = 0;
      for (let i = 0; i < 1 + Math.floor(random() * 60); i++) {
        const device = `dev_${Math.floor(random() * 3)}`;
        const counter = random() < 0.5;
        const capability = counter ? 'electrical.energy_import' : 'environment.temperature';
        const filedMs = startMs + Math.floor(random() * spanMs);
        if (filedMs < latest) sawLate += 1;
        latest = Math.max(latest, filedMs);
        // A counter mostly rises, and now and then resets.
        const previous = counters.get(device) ?? 100;
        const number = counter
          ? random() < 0.1
            ? random() * 5
            : previous + random() * 10
          : random() * 40 - 10;
        if (counter) counters.set(device, number);
        readings.push({
          deviceId: device,
          capability,
          filedMs,
          n: i,
          number,
          counter,
          zone: device === 'dev_0' ? 'Asia/Kolkata' : device === 'dev_1' ? 'America/New_York' : 'UTC',
        });
      }
      const folds = foldBatch(readings);
      if (folds.some((f) => f.start1h === null)) sawMultiMinute += 1;
      expect(foldRows(folds)).to.deep.equal(referenceFolds(readings), `batch ${batch}`);
    }
    // The cases the fold takes apart really came up.
    expect(sawLate).to.be.greaterThan(100);
    expect(sawMultiMinute).to.be.greaterThan(50);
  });

  it('keeps nothing of the reading object it is given, so one object can carry every reading', () => {
    const fresh = [
      reading('2026-11-28T10:15:01Z', 20, { counter: true, capability: 'electrical.energy_import' }),
      reading('2026-11-28T10:17:31Z', 22, { counter: true, capability: 'electrical.energy_import' }),
      reading('2026-11-28T10:16:59Z', 21, { deviceId: 'dev_b' }),
    ];
    const fold = new BatchFold(dayOf);
    const carrier = { ...fresh[0]! };
    for (const r of fresh) fold.add(Object.assign(carrier, r));
    expect(foldRows(fold.folds())).to.deep.equal(referenceFolds(fresh));
  });
});
