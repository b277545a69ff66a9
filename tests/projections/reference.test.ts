import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { findCapability } from '../../src/domain/catalogue/index.js';
import {
  bucketStart,
  pointValue,
  filedAt,
  isCounter,
  readingsStreamName,
  riseAlong,
  type StoredResolution,
} from '../../src/domain/readings/index.js';
import type { BatchEntry } from '../../src/eventstore/port.js';
import { seededRandom } from '../../src/edge-sim/random.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { stateProjector } from '../../src/projections/state/projector.js';
import { CATCHING_UP_SPAN_MS, telemetryProjector } from '../../src/projections/telemetry/projector.js';
import {
  bucketStats,
  readBuckets,
  readPointsJson,
  readRawReadings,
  type BucketRow,
  type RawReadingRow,
} from '../../src/projections/telemetry/queries.js';
import { inTransaction } from '../../src/infra/postgres/pool.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

/**
 * The optimised projectors (readings folded per bucket in memory, one statement per batch, replays skipped
 * by position) against a reference written here the plain way: every reading of a randomised history,
 * grouped per bucket, sorted, and reduced. Speed must never buy a wrong number.
 */
const SITES = [
  { siteId: 'site_berlin', timezone: 'Europe/Berlin' },
  { siteId: 'site_newyork', timezone: 'America/New_York' },
  { siteId: 'site_kolkata', timezone: 'Asia/Kolkata' },
] as const;
const CAPABILITIES = [
  'environment.temperature',
  'electrical.energy_import',
  'energy.produced_today',
  'binary.switch',
  'evse.state',
] as const;
const MINUTE = 60_000;
// Across Europe's 2026 spring DST change (29 March) and into New York's summer time.
const START_MS = Date.parse('2026-03-28T18:00:00Z');

interface Message {
  readonly deviceId: string;
  readonly siteId: string | undefined;
  readonly receivedAt: string;
  readonly readings: { capability: string; value: number | boolean | string; deviceTime?: string }[];
}

/**
 * Devices at three sites (and one without a site: UTC days) report for about 30 hours: a temperature, a
 * meter total that is once replaced (a reset), a daily counter that resets at local midnight (and, as real
 * inverters do, sometimes reports its reset late), a switch, and a text state. Device clocks are mostly
 * right; some messages are buffered and arrive minutes to hours late, some clocks run ahead or far behind
 * (filed at server time then), and a few messages carry no device time.
 */
function history(seed: number, count: number): Message[] {
  const next = seededRandom(seed);
  const devices = [
    ...SITES.flatMap((s, i) => [0, 1].map((d) => ({ deviceId: `dev_ref${i}${d}`, siteId: s.siteId }))),
    { deviceId: 'dev_refnosite', siteId: undefined },
  ];
  const meter = new Map<string, number>();
  const today = new Map<string, number>();
  const messages: Message[] = [];
  let serverMs = START_MS;
  for (let i = 0; i < count; i++) {
    serverMs += Math.floor(next() * 3 * MINUTE);
    const device = devices[Math.floor(next() * devices.length)]!;
    const lateness = next() < 0.2 ? Math.floor(next() * 3 * 3_600_000) : Math.floor(next() * 5000);
    const skew = next();
    const deviceMs =
      skew < 0.03 ? serverMs + 20 * MINUTE : skew < 0.06 ? serverMs - 9 * 86_400_000 : serverMs - lateness;
    const deviceTime = next() < 0.05 ? undefined : new Date(deviceMs).toISOString();
    // Some devices time each reading of a message on its own (a hub that forwards what it buffered).
    const ownTimes = deviceTime !== undefined && next() < 0.1;
    const readings: Message['readings'] = [];
    for (const capability of CAPABILITIES) {
      if (next() < 0.3) continue;
      let value: number | boolean | string;
      if (capability === 'environment.temperature') value = Math.round((15 + next() * 10) * 100) / 100;
      else if (capability === 'electrical.energy_import') {
        const total = next() < 0.01 ? 0 : (meter.get(device.deviceId) ?? 1000) + Math.floor(next() * 50);
        meter.set(device.deviceId, total);
        value = total;
      } else if (capability === 'energy.produced_today') {
        const kwh = next() < 0.05 ? 0 : (today.get(device.deviceId) ?? 0) + Math.round(next() * 30) / 100;
        today.set(device.deviceId, kwh);
        value = kwh;
      } else if (capability === 'binary.switch') value = next() < 0.5;
      else value = next() < 0.5 ? 'charging' : 'idle';
      // Its own time, none, or one too far ahead: the last two are both filed at the server's time.
      const own = next();
      const readingTime = !ownTimes
        ? deviceTime
        : own < 0.2
          ? undefined
          : own < 0.4
            ? new Date(serverMs + 60 * MINUTE).toISOString()
            : new Date(deviceMs - Math.floor(next() * 3) * 7_000).toISOString();
      readings.push({ capability, value, ...(readingTime !== undefined && { deviceTime: readingTime }) });
    }
    if (readings.length === 0) continue;
    messages.push({
      deviceId: device.deviceId,
      siteId: device.siteId,
      receivedAt: new Date(serverMs).toISOString(),
      readings,
    });
  }
  return messages;
}

interface Stats {
  samples: number;
  sum: number;
  min: number;
  max: number;
  first: number;
  last: number;
  increase: number | null;
}

/** The reference: every numeric reading in its bucket, sorted by filing time then global order, reduced. */
function referenceBuckets(messages: readonly Message[]): Map<string, Stats> {
  const zoneOf = (siteId: string | undefined) => SITES.find((s) => s.siteId === siteId)?.timezone ?? 'UTC';
  const groups = new Map<string, { filedMs: number; order: number; value: number; counter: boolean }[]>();
  let order = 0;
  for (const m of messages) {
    const serverMs = Date.parse(m.receivedAt);
    for (const r of m.readings) {
      order += 1;
      const capability = findCapability(r.capability)!;
      if (typeof r.value === 'string') continue;
      const filedMs = filedAt(serverMs, r.deviceTime === undefined ? undefined : Date.parse(r.deviceTime));
      for (const resolution of ['1m', '1h', '1d'] as const) {
        const key = bucketKey(
          resolution,
          m.deviceId,
          r.capability,
          bucketStart(resolution, filedMs, zoneOf(m.siteId)),
        );
        const group = groups.get(key) ?? [];
        group.push({ filedMs, order, value: Number(r.value), counter: isCounter(capability) });
        groups.set(key, group);
      }
    }
  }
  const buckets = new Map<string, Stats>();
  for (const [key, readings] of groups) {
    readings.sort((a, b) => a.filedMs - b.filedMs || a.order - b.order);
    const values = readings.map((r) => r.value);
    buckets.set(key, {
      samples: values.length,
      sum: values.reduce((s, v) => s + v, 0),
      min: Math.min(...values),
      max: Math.max(...values),
      first: values[0]!,
      last: values.at(-1)!,
      increase: readings[0]!.counter ? riseAlong(values) : null,
    });
  }
  return buckets;
}

/** The reference raw readings per device: every reading, by filing time then global order. */
function referenceRaw(messages: readonly Message[]) {
  const raw = new Map<string, { order: number; reading: RawReadingRow }[]>();
  let order = 0;
  for (const m of messages) {
    const serverMs = Date.parse(m.receivedAt);
    for (const r of m.readings) {
      order += 1;
      const filedMs = filedAt(serverMs, r.deviceTime === undefined ? undefined : Date.parse(r.deviceTime));
      const list = raw.get(m.deviceId) ?? [];
      list.push({
        order,
        reading: {
          capability: r.capability,
          filedAt: new Date(filedMs),
          value: r.value,
          deviceTime: r.deviceTime === undefined ? null : new Date(r.deviceTime),
          serverTime: new Date(serverMs),
        },
      });
      raw.set(m.deviceId, list);
    }
  }
  return new Map(
    [...raw].map(([deviceId, list]) => [
      deviceId,
      list
        .sort((a, b) => a.reading.filedAt.getTime() - b.reading.filedAt.getTime() || a.order - b.order)
        .map((x) => x.reading),
    ]),
  );
}

/** The reference state: per device and capability the reading with the latest server time, later wins ties. */
function referenceState(messages: readonly Message[]) {
  const state = new Map<
    string,
    { value: unknown; serverMs: number; filedMs: number; deviceTime: string | null }
  >();
  messages.forEach((m) => {
    const serverMs = Date.parse(m.receivedAt);
    const seen = new Set<string>();
    for (const r of m.readings) {
      const key = `${m.deviceId}/${r.capability}`;
      const filedMs = filedAt(serverMs, r.deviceTime === undefined ? undefined : Date.parse(r.deviceTime));
      const current = state.get(key);
      // A later message wins on an equal server time; within one message the later filed reading.
      const wins =
        !current ||
        serverMs > current.serverMs ||
        (serverMs === current.serverMs && (!seen.has(key) || filedMs >= current.filedMs));
      if (wins) state.set(key, { value: r.value, serverMs, filedMs, deviceTime: r.deviceTime ?? null });
      seen.add(key);
    }
  });
  return state;
}

const bucketKey = (resolution: StoredResolution, deviceId: string, capability: string, startMs: number) =>
  `${resolution}/${deviceId}/${capability}/${new Date(startMs).toISOString()}`;

describe('optimised state and telemetry projectors against a reference projection', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  beforeEach(async () => {
    ({ db, store } = await openEventStore());
    for (const site of SITES) {
      await store.append(
        `site-${site.siteId}`,
        [
          {
            id: randomUUID(),
            type: 'SiteCreated',
            data: { ...site, projectId: 'prj_ref', name: site.siteId },
          },
        ],
        'no_stream',
      );
    }
  });
  afterEach(async () => {
    await closeEventStore({ db, store });
  });

  /** Appends the history in randomly sized grouped appends, in order: append order is the global order. */
  async function append(messages: readonly Message[], seed: number) {
    const next = seededRandom(seed);
    for (let i = 0; i < messages.length;) {
      const size = 1 + Math.floor(next() * 40);
      const entries: BatchEntry[] = messages.slice(i, i + size).map((m) => ({
        streamName: readingsStreamName(m.deviceId),
        event: {
          id: randomUUID(),
          type: 'ReadingsRecorded',
          data: {
            deviceId: m.deviceId,
            projectId: 'prj_ref',
            ...(m.siteId !== undefined && { siteId: m.siteId }),
            agentId: 'agt_ref',
            receivedAt: m.receivedAt,
            readings: m.readings,
          },
        },
      }));
      await store.appendBatch(entries);
      i += size;
    }
  }

  /** The buckets as the telemetry endpoint reads them: hours and days merged with their pending minutes. */
  async function bucketsAsRead(deviceIds: readonly string[]): Promise<Map<string, Stats>> {
    const buckets = new Map<string, Stats>();
    for (const resolution of ['1m', '1h', '1d'] as const) {
      for (const deviceId of deviceIds) {
        const read = await readBuckets(db.pool, {
          deviceId,
          capabilities: CAPABILITIES,
          resolution,
          from: new Date(START_MS - 30 * 86_400_000),
          to: new Date(START_MS + 30 * 86_400_000),
        });
        for (const b of read) {
          const { capability: _c, start: _s, ...stats } = b;
          buckets.set(bucketKey(resolution, deviceId, b.capability, b.start.getTime()), stats);
        }
      }
    }
    return buckets;
  }

  /** The bucket tables' rows once nothing is left pending (Projector.settle). */
  async function settledBuckets(): Promise<Map<string, Stats>> {
    const settle = telemetryProjector().settle!;
    await inTransaction(db.pool, (client) => settle(client));
    const pending = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM telemetry_pending');
    expect(pending.rows[0]!.n, 'minutes left pending once settled').to.equal(0);
    const buckets = new Map<string, Stats>();
    for (const resolution of ['1m', '1h', '1d'] as const) {
      const { rows } = await db.pool.query<BucketRow & { device_id: string }>(
        `SELECT * FROM telemetry_${resolution}`,
      );
      for (const r of rows) {
        buckets.set(
          bucketKey(resolution, r.device_id, r.capability, r.bucket_start.getTime()),
          bucketStats(r),
        );
      }
    }
    return buckets;
  }

  /**
   * The points the endpoint's JSON statement writes for hours and days, in the form that merges pending
   * minutes, against the buckets read for them: the same numbers, function by function.
   */
  async function expectSamePoints(deviceIds: readonly string[]) {
    // Sorted, so points (in the order asked for) and buckets (by capability) come in the same order.
    const numeric = CAPABILITIES.filter((c) => c !== 'evse.state').sort();
    let merged = 0;
    for (const resolution of ['1h', '1d'] as const) {
      for (const deviceId of deviceIds) {
        const window = {
          deviceId,
          resolution,
          from: new Date(START_MS - 30 * 86_400_000),
          to: new Date(START_MS + 30 * 86_400_000),
        };
        const pending = await db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM telemetry_pending WHERE device_id = $1',
          [deviceId],
        );
        merged += pending.rows[0]!.n;
        const buckets = await readBuckets(db.pool, { ...window, capabilities: numeric });
        for (const aggregation of ['avg', 'min', 'max', 'sum', 'first', 'last', 'count'] as const) {
          const served = new Map(numeric.map((c) => [c, aggregation]));
          const points = JSON.parse(`[${await readPointsJson(db.pool, { ...window, served })}]`) as {
            capability_key: string;
            bucket: string;
            samples: number;
            value: number;
          }[];
          expect(
            points.map((p) => [p.capability_key, p.bucket, p.samples, p.value]),
            `${resolution} ${aggregation} ${deviceId}`,
          ).to.deep.equal(
            buckets.map((b) => [
              b.capability,
              b.start.toISOString(),
              b.samples,
              pointValue(b, aggregation, undefined),
            ]),
          );
        }
      }
    }
    expect(merged, 'devices with pending minutes were read').to.be.greaterThan(0);
  }

  function expectSameBuckets(actual: Map<string, Stats>, expected: Map<string, Stats>) {
    expect([...actual.keys()].sort()).to.deep.equal([...expected.keys()].sort());
    for (const [key, want] of expected) {
      const got = actual.get(key)!;
      const where = `bucket ${key}`;
      expect(got.samples, where).to.equal(want.samples);
      expect(got.min, where).to.equal(want.min);
      expect(got.max, where).to.equal(want.max);
      expect(got.first, where).to.equal(want.first);
      expect(got.last, where).to.equal(want.last);
      // Sums of floats depend on the order of addition; a last-digit difference is not a different number.
      expect(got.sum, where).to.be.closeTo(want.sum, 1e-9 * Math.max(1, Math.abs(want.sum)));
      if (want.increase === null) expect(got.increase, where).to.equal(null);
      else expect(got.increase, where).to.be.closeTo(want.increase, 1e-9 * Math.max(1, want.increase));
    }
  }

  // Its batches span minutes of arrivals, so by default each closes every minute it holds (catching up);
  // followed as the head is (no batch catching up), the same history leaves minutes pending.
  const modes = [
    { mode: 'catching up', catchingUpSpanMs: CATCHING_UP_SPAN_MS },
    { mode: 'as at the head', catchingUpSpanMs: Infinity },
  ] as const;
  for (const seed of [1, 2, 3]) {
    for (const { mode, catchingUpSpanMs } of modes) {
      it(`gives the reference's buckets, raw rows and latest state, whatever the batch sizes (seed ${seed}, ${mode})`, async () => {
        const messages = history(seed, 700);
        await append(messages, seed);
        const expected = referenceBuckets(messages);
        // The history really exercises what it claims to.
        const counters = [...expected.entries()].filter(
          ([k, s]) => k.includes('energy') && s.increase !== null,
        );
        expect(
          counters.some(([, s]) => s.increase! < s.max - s.min),
          'a counter reset inside a bucket',
        ).to.equal(true);
        expect(
          messages.some(
            (m, i) =>
              i > 0 &&
              m.readings[0]?.deviceTime !== undefined &&
              Date.parse(m.readings[0].deviceTime) < Date.parse(messages[i - 1]!.receivedAt) - 3_600_000,
          ),
          'out-of-order device times',
        ).to.equal(true);

        // Small odd batches first, then the rest in one go: batch boundaries fall everywhere.
        const telemetry = telemetryProjector(undefined, { catchingUpSpanMs });
        await catchUpProjector(db.pool, store, telemetry, 23);
        const devices = [...new Set(messages.map((m) => m.deviceId))];
        const read = await bucketsAsRead(devices);
        // At the head, the rollup really left minutes pending that readers had to merge in; catching up, none.
        const pending = await db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM telemetry_pending',
        );
        if (mode === 'catching up') expect(pending.rows[0]!.n, 'minutes pending').to.equal(0);
        else expect(pending.rows[0]!.n, 'minutes pending after the catch-up').to.be.greaterThan(0);
        expectSameBuckets(read, expected);
        if (mode === 'as at the head') await expectSamePoints(devices);
        expectSameBuckets(await settledBuckets(), expected);
        expectSameBuckets(await bucketsAsRead(devices), expected);
        // Raw readings as resolution=raw reads them: every reading once, in filing then global order.
        const raw = referenceRaw(messages);
        expect(
          messages.some((m) => {
            const serverMs = Date.parse(m.receivedAt);
            const filed = m.readings.map((r) =>
              filedAt(serverMs, r.deviceTime === undefined ? undefined : Date.parse(r.deviceTime)),
            );
            return m.readings.some((r, b) =>
              filed.some(
                (f, a) =>
                  a < b &&
                  b < filed.length - 1 &&
                  f === filed.at(-1) &&
                  r.deviceTime !== m.readings[a]!.deviceTime,
              ),
            );
          }),
          'a message with readings filed at one time that another reading between them keeps apart',
        ).to.equal(true);
        for (const [deviceId, want] of raw) {
          const got = await readRawReadings(db.pool, {
            deviceId,
            capabilities: CAPABILITIES,
            from: new Date(START_MS - 30 * 86_400_000),
            to: new Date(START_MS + 30 * 86_400_000),
            limit: 100_000,
          });
          expect(got, deviceId).to.deep.equal(want);
        }
        const rows = await db.pool.query<{ instants: number; readings: number }>(
          'SELECT count(*)::int AS instants, sum(cardinality(capabilities))::int AS readings FROM telemetry_raw',
        );
        expect(rows.rows[0]!.readings).to.equal(messages.reduce((n, m) => n + m.readings.length, 0));
        // One row per instant of a message: fewer rows than readings, more than messages.
        expect(rows.rows[0]!.instants)
          .to.be.greaterThan(messages.length)
          .and.lessThan(rows.rows[0]!.readings);

        await catchUpProjector(db.pool, store, stateProjector(), 57);
        const state = await db.pool.query<{
          device_id: string;
          capability: string;
          value: unknown;
          device_time: Date | null;
          server_time: Date;
        }>('SELECT * FROM device_state');
        const reference = referenceState(messages);
        expect(state.rows).to.have.length(reference.size);
        for (const row of state.rows) {
          const want = reference.get(`${row.device_id}/${row.capability}`)!;
          expect(row.value, `${row.device_id}/${row.capability}`).to.deep.equal(want.value);
          expect(row.server_time.getTime()).to.equal(want.serverMs);
          expect(row.device_time?.toISOString() ?? null).to.equal(want.deviceTime);
        }
      });
    }
  }

  it('gives the same buckets when the whole history is applied again, and when more arrives later', async () => {
    const messages = history(7, 500);
    await append(messages.slice(0, 300), 7);
    const telemetry = telemetryProjector();
    await catchUpProjector(db.pool, store, telemetry, 1000);
    // Everything applied again, straight through the projector: replays are skipped by position.
    const { events } = await store.readAll({ maxCount: 10_000, eventTypes: telemetry.eventTypes });
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await telemetry.apply(events, client);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    const devices = [...new Set(messages.map((m) => m.deviceId))];
    expectSameBuckets(await bucketsAsRead(devices), referenceBuckets(messages.slice(0, 300)));
    await append(messages.slice(300), 8);
    await catchUpProjector(db.pool, store, telemetry, 64);
    expectSameBuckets(await bucketsAsRead(devices), referenceBuckets(messages));
    expectSameBuckets(await settledBuckets(), referenceBuckets(messages));
  });
});
