import { expect } from 'chai';
import {
  foldBatch,
  type BucketFold,
  type FoldedReading,
} from '../../src/projections/telemetry/batch-fold.js';
import { LocalDays } from '../../src/projections/telemetry/local-days.js';

const days = new LocalDays();
const dayOf = (ms: number, zone: string) => days.of(ms, zone);
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
