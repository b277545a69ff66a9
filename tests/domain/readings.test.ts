import { expect } from 'chai';
import { findCapability, type Capability } from '../../src/domain/catalogue/index.js';
import {
  BACKFILL_LIMIT_MS,
  ReadingsRecorded,
  bucketStart,
  filedAt,
  localDayOf,
  mergeBuckets,
  pointValue,
  qualityOf,
  resetAwareRise,
  riseAlong,
  screenReadings,
  servedAggregation,
  startOfLocalDay,
  windowProblem,
  type BucketStats,
} from '../../src/domain/readings/index.js';

const ms = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();
const HOUR = 3_600_000;
const capability = (key: string): Capability => findCapability(key)!;

describe('readings (domain)', () => {
  describe('screening a message against the catalogue and the device', () => {
    const offered = new Set(['environment.temperature', 'water.leak', 'evse.state', 'system.rssi']);

    it('given good readings, when screened, then every one is accepted unchanged', () => {
      const readings = [
        { capability: 'environment.temperature', value: 21.5 },
        { capability: 'water.leak', value: false },
        { capability: 'evse.state', value: 'charging' },
      ];
      expect(screenReadings(readings, offered)).to.deep.equal({ accepted: readings, refused: [] });
    });

    it('given one bad reading among good ones, then only that one is refused, with its reason', () => {
      const { accepted, refused } = screenReadings(
        [
          { capability: 'environment.temperature', value: 900 },
          { capability: 'water.leak', value: true },
        ],
        offered,
      );
      expect(accepted).to.deep.equal([{ capability: 'water.leak', value: true }]);
      expect(refused).to.deep.equal([
        { index: 0, capability: 'environment.temperature', reason: 'out_of_range' },
      ]);
    });

    it('refuses unknown keys, keys the device does not offer, wrong types and non-finite numbers; never coerces', () => {
      const { accepted, refused } = screenReadings(
        [
          { capability: 'environment.radon', value: 3 },
          { capability: 'environment.humidity', value: 40 },
          { capability: 'water.leak', value: 1 },
          { capability: 'environment.temperature', value: '21.5' },
          { capability: 'environment.temperature', value: Number.NaN },
          { capability: 'system.rssi', value: -60.5 },
          { capability: 'evse.state', value: 'Charging' },
        ],
        offered,
      );
      expect(accepted).to.deep.equal([]);
      expect(refused.map((r) => r.reason)).to.deep.equal([
        'unknown_capability',
        'not_a_device_capability',
        'wrong_type',
        'wrong_type',
        'not_finite',
        'off_step',
        'not_in_enum',
      ]);
    });

    it('the event keeps reading events apart from the control plane: retention "readings"', () => {
      expect(ReadingsRecorded.retention).to.equal('readings');
    });
  });

  describe('the time a reading is filed under', () => {
    const server = ms('2026-06-01T12:00:00Z');

    it('is the device time when it is plausible, including a reading delivered late from the edge', () => {
      expect(filedAt(server, server - 90_000)).to.equal(server - 90_000);
      expect(filedAt(server, server - 3 * 86_400_000)).to.equal(server - 3 * 86_400_000);
      expect(filedAt(server, server + 4 * 60_000)).to.equal(server + 4 * 60_000);
    });

    it('is the server time when the device time is absent, in the future or older than the backfill limit', () => {
      expect(filedAt(server, undefined)).to.equal(server);
      expect(filedAt(server, server + 6 * 60_000)).to.equal(server);
      expect(filedAt(server, server - BACKFILL_LIMIT_MS - 1)).to.equal(server);
    });
  });

  describe('local days and buckets', () => {
    it('given Europe/Berlin on 2026-03-29, then the day is 23 hours (spring forward)', () => {
      const day = localDayOf(ms('2026-03-29T12:00:00Z'), 'Europe/Berlin');
      expect([iso(day.start), iso(day.end)]).to.deep.equal([
        '2026-03-28T23:00:00.000Z',
        '2026-03-29T22:00:00.000Z',
      ]);
      expect((day.end - day.start) / HOUR).to.equal(23);
    });

    it('given Europe/Berlin on 2026-10-25, then the day is 25 hours (fall back)', () => {
      const day = localDayOf(ms('2026-10-25T12:00:00Z'), 'Europe/Berlin');
      expect([iso(day.start), iso(day.end)]).to.deep.equal([
        '2026-10-24T22:00:00.000Z',
        '2026-10-25T23:00:00.000Z',
      ]);
      expect((day.end - day.start) / HOUR).to.equal(25);
    });

    it('puts an instant just after local midnight in the new day and one just before in the old', () => {
      expect(iso(startOfLocalDay(ms('2026-03-28T23:00:00Z'), 'Europe/Berlin'))).to.equal(
        '2026-03-28T23:00:00.000Z',
      );
      expect(iso(startOfLocalDay(ms('2026-03-28T22:59:59.999Z'), 'Europe/Berlin'))).to.equal(
        '2026-03-27T23:00:00.000Z',
      );
    });

    it('starts the day at the jump when the clocks skip midnight (America/Santiago, 2026-09-06)', () => {
      const day = localDayOf(ms('2026-09-06T12:00:00Z'), 'America/Santiago');
      expect(iso(day.start)).to.equal('2026-09-06T04:00:00.000Z');
      expect((day.end - day.start) / HOUR).to.equal(23);
    });

    it('handles half-hour offsets: the Kolkata day starts at 18:30 UTC, while 1h buckets stay UTC-aligned', () => {
      const t = ms('2026-03-29T12:45:10Z');
      expect(iso(bucketStart('1d', t, 'Asia/Kolkata'))).to.equal('2026-03-28T18:30:00.000Z');
      expect(iso(bucketStart('1h', t, 'Asia/Kolkata'))).to.equal('2026-03-29T12:00:00.000Z');
      expect(iso(bucketStart('5m', t, 'Asia/Kolkata'))).to.equal('2026-03-29T12:45:00.000Z');
      expect(iso(bucketStart('1m', t, 'Asia/Kolkata'))).to.equal('2026-03-29T12:45:00.000Z');
    });

    it('refuses a window that is backwards or too wide for its resolution, and allows an empty one', () => {
      const from = ms('2026-01-01T00:00:00Z');
      expect(windowProblem('1m', from, from - 1)).to.equal('from_after_to');
      expect(windowProblem('raw', from, from + 24 * HOUR)).to.equal(undefined);
      expect(windowProblem('raw', from, from + 24 * HOUR + 1)).to.equal('window_too_large');
      expect(windowProblem('1m', from, from + 8 * 24 * HOUR)).to.equal('window_too_large');
      expect(windowProblem('1d', from, from + 3000 * 24 * HOUR)).to.equal(undefined);
      expect(windowProblem('1h', from, from)).to.equal(undefined);
    });
  });

  describe('quality markers', () => {
    const now = ms('2026-06-01T12:00:00Z');
    const temperature = capability('environment.temperature'); // stale after 7200 s

    it('given a fresh reading with an agreeing device clock, then it is valid', () => {
      const quality = qualityOf({
        capability: temperature,
        serverTimeMs: now - 60_000,
        deviceTimeMs: now - 61_000,
        nowMs: now,
        siteDayStartMs: undefined,
      });
      expect(quality).to.deep.equal(['valid']);
    });

    it('marks stale once older than the catalogue threshold, and clock_skew beyond 5 minutes', () => {
      const old = { capability: temperature, deviceTimeMs: undefined, nowMs: now, siteDayStartMs: undefined };
      expect(qualityOf({ ...old, serverTimeMs: now - 7_200_000 })).to.deep.equal(['valid']);
      expect(qualityOf({ ...old, serverTimeMs: now - 7_200_001 })).to.deep.equal(['stale']);
      expect(
        qualityOf({ ...old, serverTimeMs: now - 7_200_001, deviceTimeMs: now - 7_200_001 - 6 * 60_000 }),
      ).to.deep.equal(['stale', 'clock_skew']);
      expect(qualityOf({ ...old, serverTimeMs: now, deviceTimeMs: now + 5 * 60_000 + 1 })).to.deep.equal([
        'clock_skew',
      ]);
    });

    it("marks a daily counter from before the site's last local midnight stale, however recent", () => {
      const producedToday = capability('energy.produced_today');
      const dayStart = startOfLocalDay(ms('2026-03-29T00:30:00Z'), 'Europe/Berlin'); // 2026-03-28T23:00Z
      const at = (serverIso: string) =>
        qualityOf({
          capability: producedToday,
          serverTimeMs: ms(serverIso),
          deviceTimeMs: undefined,
          nowMs: ms('2026-03-29T00:30:00Z'),
          siteDayStartMs: dayStart,
        });
      expect(at('2026-03-28T22:59:00Z')).to.deep.equal(['stale']);
      expect(at('2026-03-28T23:01:00Z')).to.deep.equal(['valid']);
    });
  });

  describe('aggregation of buckets', () => {
    it('never averages or sums a counter: it is served max, and increase where asked', () => {
      for (const key of [
        'energy.produced_today',
        'energy.consumed_today',
        'evse.total_energy',
        'electrical.energy_import',
        'evse.session_energy',
      ]) {
        expect(servedAggregation(capability(key), 'avg'), key).to.equal('max');
        expect(servedAggregation(capability(key), 'sum'), key).to.equal('max');
        expect(servedAggregation(capability(key), 'min'), key).to.equal('max');
        expect(servedAggregation(capability(key), 'last'), key).to.equal('last');
        expect(servedAggregation(capability(key), 'increase'), key).to.equal('increase');
      }
    });

    it('serves gauges as asked, booleans by last/min/max, and text not at all', () => {
      const temperature = capability('environment.temperature');
      for (const a of ['avg', 'min', 'max', 'sum', 'first', 'last', 'count'] as const) {
        expect(servedAggregation(temperature, a)).to.equal(a);
      }
      expect(servedAggregation(temperature, 'increase')).to.equal('avg');
      const leak = capability('water.leak');
      expect(servedAggregation(leak, 'avg')).to.equal('last');
      expect(servedAggregation(leak, 'max')).to.equal('max');
      expect(servedAggregation(leak, 'count')).to.equal('count');
      expect(servedAggregation(capability('evse.state'), 'last')).to.equal(undefined);
    });

    it('counts a drop as a reset: the rise starts again from 0', () => {
      expect(resetAwareRise(10, 12.5)).to.equal(2.5);
      expect(resetAwareRise(12.5, 0.25)).to.equal(0.25);
      expect(riseAlong([10, 11.5, 12, 0.25, 0.75])).to.equal(2.75);
    });

    it('given a daily counter across local midnight, then increase per day and per hour is reset-aware', () => {
      // produced_today in Europe/Berlin: 23:00 and 23:30 on the 28th (local), 00:15 and 00:45 on the 29th.
      const lateDay: BucketStats = {
        samples: 2,
        sum: 24.5,
        min: 12,
        max: 12.5,
        first: 12,
        last: 12.5,
        increase: 0.5,
      };
      const nextDay: BucketStats = {
        samples: 2,
        sum: 1,
        min: 0.25,
        max: 0.75,
        first: 0.25,
        last: 0.75,
        increase: 0.5,
      };
      // The next day's first reading (0.25) is below the previous day's last: counted from 0.
      expect(pointValue(nextDay, 'increase', lateDay.last)).to.equal(0.75);
      expect(pointValue(lateDay, 'increase', 11)).to.equal(1.5);
      expect(pointValue(lateDay, 'increase', undefined)).to.equal(0.5);
      expect(pointValue(nextDay, 'max', undefined)).to.equal(0.75);
    });

    it('merges adjacent 1-minute buckets into a 5-minute one, increase included', () => {
      const a: BucketStats = { samples: 2, sum: 3, min: 1, max: 2, first: 1, last: 2, increase: 1 };
      const b: BucketStats = { samples: 1, sum: 0.5, min: 0.5, max: 0.5, first: 0.5, last: 0.5, increase: 0 };
      const c: BucketStats = {
        samples: 2,
        sum: 2,
        min: 0.75,
        max: 1.25,
        first: 0.75,
        last: 1.25,
        increase: 0.5,
      };
      expect(mergeBuckets([a, b, c])).to.deep.equal({
        samples: 5,
        sum: 5.5,
        min: 0.5,
        max: 2,
        first: 1,
        last: 1.25,
        increase: 1 + 0.5 + 0.25 + 0.5,
      });
      expect(pointValue(mergeBuckets([a, b, c]), 'avg', undefined)).to.equal(1.1);
    });
  });
});
