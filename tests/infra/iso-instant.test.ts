import { expect } from 'chai';
import { isoInstant } from '../../src/infra/iso-time.js';

describe('isoInstant: epoch milliseconds written as toISOString writes them', () => {
  const day = 86_400_000;
  const around = (ms: number) => [ms - day - 1, ms - 1, ms, ms + 1, ms + 999, ms + day - 1, ms + day];

  it('agrees with toISOString at day, month, year and leap-day boundaries, in either order of calls', () => {
    const boundaries = [
      Date.UTC(2026, 11, 7),
      Date.UTC(2026, 0, 1),
      Date.UTC(2024, 1, 29),
      Date.UTC(2000, 1, 29),
      Date.UTC(1970, 0, 1),
      Date.UTC(1969, 11, 31, 23, 59, 59, 999),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      Date.UTC(0, 0, 1) - 365 * day,
    ];
    const times = boundaries.flatMap(around);
    for (const ms of [...times, ...times.reverse()]) {
      expect(isoInstant(ms), String(ms)).to.equal(new Date(ms).toISOString());
    }
  });

  it('agrees with toISOString over random times, near each other and far apart', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    let ms = Date.UTC(2026, 10, 21);
    for (let i = 0; i < 20_000; i++) {
      ms = i % 100 === 0 ? Math.floor((random() - 0.3) * 8e12) : ms + Math.floor(random() * 5000);
      expect(isoInstant(ms)).to.equal(new Date(ms).toISOString());
    }
  });

  it('writes the years toISOString writes with six digits and a sign, and refuses an invalid time as it does', () => {
    for (const ms of [8.64e15, -8.64e15, Date.UTC(10000, 0, 1, 0, 0, 0, 1), Date.UTC(-1, 5, 1)]) {
      expect(isoInstant(ms)).to.equal(new Date(ms).toISOString());
    }
    expect(() => isoInstant(Number.NaN)).to.throw(RangeError);
  });
});
