import { expect } from 'chai';
import { CAPABILITY_KEYS, findCapability, validateValue } from '../../src/domain/catalogue/index.js';
import { PROFILES, SKEWED_CLOCK_MS, buildFleet, createSignal } from '../../src/edge-sim/index.js';
import { derivedRandom } from '../../src/edge-sim/random.js';

const context = { timezone: 'Europe/Paris', startMs: Date.parse('2026-03-28T12:00:00Z') };

function series(key: string, seed: number, fromMs: number, stepMs: number, count: number) {
  const signal = createSignal(key, derivedRandom(seed, key), context);
  return Array.from({ length: count }, (_, i) => signal.next(fromMs + i * stepMs));
}

describe('edge-sim fleet and values', () => {
  it('covers every catalogue capability, each writable one included, with thirteen devices', () => {
    const covered = new Set(buildFleet(1, PROFILES.length).flatMap((d) => d.profile.capabilities));
    expect([...covered].sort()).to.deep.equal([...CAPABILITY_KEYS].sort());
    for (const key of ['binary.switch', 'actuator.relay', 'actuator.valve', 'actuator.contactor']) {
      expect(covered.has(key), key).to.equal(true);
    }
  });

  it('is the same fleet for the same seed, with distinct addresses and exactly one skewed clock', () => {
    const fleet = buildFleet(7, 40);
    expect(buildFleet(7, 40)).to.deep.equal(fleet);
    expect(buildFleet(8, 40).map((d) => d.ieeeAddr)).not.to.deep.equal(fleet.map((d) => d.ieeeAddr));
    expect(new Set(fleet.map((d) => d.ieeeAddr)).size).to.equal(40);
    expect(fleet.every((d) => /^0x[0-9a-f]{16}$/.test(d.ieeeAddr))).to.equal(true);
    expect(fleet.filter((d) => d.clockSkewMs !== 0).map((d) => d.clockSkewMs)).to.deep.equal([
      SKEWED_CLOCK_MS,
    ]);
  });

  it('produces values the catalogue accepts, the same for the same seed', () => {
    for (const key of CAPABILITY_KEYS) {
      const values = series(key, 3, context.startMs, 1000, 500);
      expect(series(key, 3, context.startMs, 1000, 500)).to.deep.equal(values);
      for (const value of values)
        expect(validateValue(key, value).ok, `${key} ${String(value)}`).to.equal(true);
    }
  });

  it('lets meter totals only rise', () => {
    for (const key of ['electrical.energy_import', 'evse.total_energy']) {
      const values = series(key, 5, context.startMs, 10_000, 1000) as number[];
      values.forEach((v, i) => i > 0 && expect(v).to.be.at.least(values[i - 1]!));
      expect(values.at(-1)!).to.be.greaterThan(values[0]!);
    }
  });

  it('resets the daily counters at midnight in the site timezone, not UTC', () => {
    // 2026-03-28 23:00 in Paris is 22:00 UTC; the night before the switch to summer time.
    const from = Date.parse('2026-03-28T21:00:00Z');
    for (const key of ['energy.produced_today', 'energy.consumed_today']) {
      const values = series(key, 9, from, 60_000, 180) as number[];
      const resets = values.map((v, i) => (i > 0 && v < values[i - 1]! ? i : -1)).filter((i) => i >= 0);
      expect(resets, key).to.have.length(1);
      expect(new Date(from + resets[0]! * 60_000).toISOString()).to.equal('2026-03-28T23:00:00.000Z');
    }
  });

  it('keeps a writable output as commanded', () => {
    for (const key of ['binary.switch', 'actuator.relay', 'actuator.valve', 'actuator.contactor']) {
      expect(findCapability(key)!.writable).to.equal(true);
      const signal = createSignal(key, derivedRandom(1, key), context);
      signal.set(true);
      for (let i = 0; i < 200; i++) expect(signal.next(context.startMs + i)).to.equal(true);
    }
  });
});
