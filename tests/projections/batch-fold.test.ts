import { expect } from 'chai';
import { foldBatch, type FoldedReading } from '../../src/projections/telemetry/batch-fold.js';
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
      starts: {
        '1m': at('2026-11-28T10:15:00Z'),
        '1h': at('2026-11-28T10:00:00Z'),
        '1d': at('2026-11-27T23:00:00Z'), // midnight in Berlin
      },
      samples: 3,
      sum: 63,
      min: 20,
      max: 22,
      firstValue: 20,
      lastValue: 21,
    });
  });

  it('folds each resolution on its own once the readings span two minutes', () => {
    const folds = foldBatch(
      [reading('2026-11-28T10:15:59Z', 20), reading('2026-11-28T10:16:00Z', 24)],
      dayOf,
    );
    const byResolution = (key: '1m' | '1h' | '1d') =>
      folds.filter((f) => Object.keys(f.starts).includes(key));
    expect(folds.every((f) => Object.keys(f.starts).length === 1)).to.equal(true);
    expect(byResolution('1m').map((f) => [f.starts['1m'], f.samples])).to.deep.equal([
      [at('2026-11-28T10:15:00Z'), 1],
      [at('2026-11-28T10:16:00Z'), 1],
    ]);
    expect(byResolution('1h').map((f) => [f.starts['1h'], f.samples, f.sum])).to.deep.equal([
      [at('2026-11-28T10:00:00Z'), 2, 44],
    ]);
    expect(byResolution('1d').map((f) => [f.starts['1d'], f.samples, f.sum])).to.deep.equal([
      [at('2026-11-27T23:00:00Z'), 2, 44],
    ]);
  });

  it("shares per series: one device's two minutes do not split another's single minute", () => {
    const folds = foldBatch(
      [
        reading('2026-11-28T10:15:59Z', 1, { counter: true, capability: 'electrical.energy_import' }),
        reading('2026-11-28T10:15:10Z', 5, { deviceId: 'dev_b' }),
        reading('2026-11-28T10:16:00Z', 3, { counter: true, capability: 'electrical.energy_import' }),
      ],
      dayOf,
    );
    const ofB = folds.filter((f) => f.deviceId === 'dev_b');
    expect(ofB).to.have.length(1);
    expect(Object.keys(ofB[0]!.starts)).to.have.members(['1m', '1h', '1d']);
    // The counter's hour holds both minutes: its increase runs across them (1 → 3).
    const counterHour = folds.find((f) => f.deviceId === 'dev_a' && f.starts['1h'] !== undefined);
    expect(counterHour).to.deep.include({ samples: 2, increase: 2 });
  });
});
