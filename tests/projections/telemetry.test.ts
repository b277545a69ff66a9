import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { pointValue, TELEMETRY_AGGREGATIONS } from '../../src/domain/readings/index.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { inTransaction } from '../../src/infra/postgres/pool.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { installProjector } from '../../src/projections/checkpoints.js';
import type { Projector } from '../../src/projections/projector.js';
import { rebuildProjector } from '../../src/projections/rebuild.js';
import { stateProjector } from '../../src/projections/state/projector.js';
import { readDeviceState } from '../../src/projections/state/queries.js';
import { applyTelemetryRetention } from '../../src/projections/telemetry/retention.js';
import { telemetryProjector } from '../../src/projections/telemetry/projector.js';
import { COUNT_RAW_READINGS } from '../../src/projections/telemetry/sql.js';
import { readBuckets, readPointsJson } from '../../src/projections/telemetry/queries.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';
import { attachedPartitions, interruptConcurrentDetach } from '../support/partitions.js';
import { recordReadings } from '../support/readings.js';

const DEVICE = 'dev_meter01';
const SITE = 'site_berlin';

describe('state and telemetry projections', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  /**
   * These read models refuse operator rebuilds (they outlive the readings' retention), but a replay of the
   * events the store holds must still be deterministic: replay them through the rebuild machinery.
   */
  function replayFromScratch(projector: Projector, batchSize: number) {
    return rebuildProjector(db.pool, store, { ...projector, rebuildRefused: undefined }, { batchSize });
  }
  beforeEach(async () => {
    ({ db, store } = await openEventStore({ idlePollMs: 50 }));
    await store.append(
      `site-${SITE}`,
      [
        {
          id: randomUUID(),
          type: 'SiteCreated',
          data: { siteId: SITE, projectId: 'prj_test', name: 'Berlin', timezone: 'Europe/Berlin' },
        },
      ],
      'no_stream',
    );
  });
  afterEach(async () => {
    await closeEventStore({ db, store });
  });

  /**
   * Every row of the projector's tables once settled (Projector.settle: what another batching leaves
   * pending, rolled up), sorted, without the columns of how it got there: the order of application and the
   * rollup cutoff.
   */
  async function snapshot(projector: Projector) {
    if (projector.settle) await inTransaction(db.pool, (client) => projector.settle!(client));
    const tables: Record<string, unknown[]> = {};
    for (const table of projector.tables) {
      const { rows } = await db.pool.query(`SELECT * FROM ${table}`);
      tables[table] = rows
        .map(({ applied: _applied, rolled_before: _cutoff, ...row }: Record<string, unknown>) =>
          JSON.stringify(row),
        )
        .sort();
    }
    return tables;
  }

  async function applyAgain(projector: Projector) {
    const { events } = await store.readAll({ maxCount: 10_000 });
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await projector.apply(
        events.filter((e) => projector.eventTypes.includes(e.type)),
        client,
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  }

  async function applyInTransaction(
    projector: Projector,
    events: readonly RecordedEvent[],
    prepared?: unknown,
  ) {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await projector.apply(events, client, prepared);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  }

  const produced = (receivedAt: string, value: number, deviceTime?: string) => ({
    deviceId: DEVICE,
    siteId: SITE,
    receivedAt,
    readings: [{ capability: 'energy.produced_today', value, ...(deviceTime && { deviceTime }) }],
  });

  it('fills 1m, 1h and 1d buckets; the 1d buckets follow Berlin midnight across the 23-hour DST day', async () => {
    const projector = telemetryProjector();
    await recordReadings(
      store,
      produced('2026-03-28T22:30:00.000Z', 12), // 23:30 on the 28th, local
      produced('2026-03-28T22:50:00.000Z', 12.5),
      produced('2026-03-28T23:10:00.000Z', 0.25), // 00:10 on the 29th: the counter has reset
      produced('2026-03-29T21:50:00.000Z', 9), // 23:50 on the 29th
      produced('2026-03-29T22:10:00.000Z', 0.5), // 00:10 on the 30th
    );
    await catchUpProjector(db.pool, store, projector);
    const days = await readBuckets(db.pool, {
      deviceId: DEVICE,
      capabilities: ['energy.produced_today'],
      resolution: '1d',
      from: new Date('2026-03-01T00:00:00Z'),
      to: new Date('2026-04-01T00:00:00Z'),
    });
    expect(days.map((d) => [d.start.toISOString(), d.samples, d.max, d.increase])).to.deep.equal([
      ['2026-03-27T23:00:00.000Z', 2, 12.5, 0.5],
      ['2026-03-28T23:00:00.000Z', 2, 9, 8.75],
      ['2026-03-29T22:00:00.000Z', 1, 0.5, 0],
    ]);
    const hours = await readBuckets(db.pool, {
      deviceId: DEVICE,
      capabilities: ['energy.produced_today'],
      resolution: '1h',
      from: new Date('2026-03-28T00:00:00Z'),
      to: new Date('2026-03-31T00:00:00Z'),
    });
    expect(hours.map((h) => [h.start.toISOString(), h.samples, h.first, h.last])).to.deep.equal([
      ['2026-03-28T22:00:00.000Z', 2, 12, 12.5],
      ['2026-03-28T23:00:00.000Z', 1, 0.25, 0.25],
      ['2026-03-29T21:00:00.000Z', 1, 9, 9],
      ['2026-03-29T22:00:00.000Z', 1, 0.5, 0.5],
    ]);
  });

  /** The five readings of the DST test, recorded, and the projector's events: the site's, then theirs. */
  async function dstDay(projector: Projector) {
    await installProjector(db.pool, projector);
    await recordReadings(
      store,
      produced('2026-03-28T22:30:00.000Z', 12),
      produced('2026-03-28T22:50:00.000Z', 12.5),
      produced('2026-03-28T23:10:00.000Z', 0.25),
      produced('2026-03-29T21:50:00.000Z', 9),
      produced('2026-03-29T22:10:00.000Z', 0.5),
    );
    const { events } = await store.readAll({ maxCount: 100, eventTypes: projector.eventTypes });
    expect(events.map((e) => e.type)).to.deep.equal(['SiteCreated', ...Array(5).fill('ReadingsRecorded')]);
    return { site: events.slice(0, 1), readings: events.slice(1) };
  }

  const dstDays = async () =>
    (
      await readBuckets(db.pool, {
        deviceId: DEVICE,
        capabilities: ['energy.produced_today'],
        resolution: '1d',
        from: new Date('2026-03-01T00:00:00Z'),
        to: new Date('2026-04-01T00:00:00Z'),
      })
    ).map((d) => [d.start.toISOString(), d.samples, d.max, d.increase]);

  it('prepares a batch ahead only once it knows its sites, and applies it as it would have unprepared', async () => {
    const projector = telemetryProjector();
    const { site, readings } = await dstDay(projector);
    // Not yet: the site's zone decides the 1d buckets, and only apply reads or records it.
    expect(projector.prepare!([...site, ...readings])).to.equal(undefined);
    expect(projector.prepare!(readings)).to.equal(undefined);
    await applyInTransaction(projector, site);
    const prepared = projector.prepare!(readings);
    expect(prepared).to.not.equal(undefined);
    // Changed after it was prepared (events are never changed in earnest): what is stored shows whose work
    // apply used. The value goes back before the replay below.
    const first = (readings[0]!.data as { readings: { value: number }[] }).readings[0]!;
    first.value = 999;
    await applyInTransaction(projector, readings, prepared);
    first.value = 12;
    expect(await dstDays()).to.deep.equal([
      ['2026-03-27T23:00:00.000Z', 2, 12.5, 0.5],
      ['2026-03-28T23:00:00.000Z', 2, 9, 8.75],
      ['2026-03-29T22:00:00.000Z', 1, 0.5, 0],
    ]);
    const ahead = await snapshot(projector);
    // The same events replayed one per page, each prepared (or not) as it was read ahead.
    await replayFromScratch(telemetryProjector(), 1);
    expect(await snapshot(projector)).to.deep.equal(ahead);
  });

  it('sets work prepared ahead aside when some of its events were applied meanwhile', async () => {
    const projector = telemetryProjector();
    const { site, readings } = await dstDay(projector);
    await applyInTransaction(projector, site);
    const prepared = projector.prepare!(readings);
    expect(prepared).to.not.equal(undefined);
    // Another instance got the first two in first: used as prepared, they would be counted twice.
    await applyInTransaction(telemetryProjector(), readings.slice(0, 2));
    await applyInTransaction(projector, readings, prepared);
    expect(await dstDays()).to.deep.equal([
      ['2026-03-27T23:00:00.000Z', 2, 12.5, 0.5],
      ['2026-03-28T23:00:00.000Z', 2, 9, 8.75],
      ['2026-03-29T22:00:00.000Z', 1, 0.5, 0],
    ]);
  });

  it('changes nothing when a batch is applied twice, and a rebuild gives the same tables', async () => {
    const telemetry = telemetryProjector();
    const state = stateProjector();
    await recordReadings(
      store,
      produced('2026-06-01T10:00:00.000Z', 1),
      produced('2026-06-01T10:00:30.000Z', 2, '2026-06-01T10:00:20.000Z'),
      {
        deviceId: DEVICE,
        siteId: SITE,
        receivedAt: '2026-06-01T10:01:00.000Z',
        readings: [
          { capability: 'water.leak', value: true },
          { capability: 'evse.state', value: 'charging' },
          { capability: 'environment.temperature', value: 21.5 },
        ],
      },
    );
    for (const projector of [telemetry, state]) {
      await catchUpProjector(db.pool, store, projector);
      const before = await snapshot(projector);
      await catchUpProjector(db.pool, store, projector);
      await applyAgain(projector);
      expect(await snapshot(projector), `${projector.name}: applied again`).to.deep.equal(before);
      await replayFromScratch(projector, 2);
      expect(await snapshot(projector), `${projector.name}: rebuilt`).to.deep.equal(before);
    }
    const { rows } = await db.pool.query(COUNT_RAW_READINGS);
    expect(rows[0].n).to.equal(5); // text readings are kept raw, they have no buckets
  });

  it('keeps a counter increase exact when a late reading lands between two stored ones', async () => {
    const live = telemetryProjector();
    // 10:00 -> 5, 10:20 -> 1 (a reset); then, late, the device's 10:10 reading of 7.
    await recordReadings(
      store,
      produced('2026-06-01T10:00:00.000Z', 5),
      produced('2026-06-01T10:20:00.000Z', 1),
    );
    await catchUpProjector(db.pool, store, live);
    await recordReadings(store, produced('2026-06-01T10:25:00.000Z', 7, '2026-06-01T10:10:00.000Z'));
    await catchUpProjector(db.pool, store, live);
    const query = {
      deviceId: DEVICE,
      capabilities: ['energy.produced_today'],
      resolution: '1h' as const,
      from: new Date('2026-06-01T00:00:00Z'),
      to: new Date('2026-06-02T00:00:00Z'),
    };
    const [hour] = await readBuckets(db.pool, query);
    // In filing order 5, 7, 1: rise 2, then a reset counted from 0: 1. First and last by time, not arrival.
    expect([hour!.samples, hour!.first, hour!.last, hour!.min, hour!.max, hour!.increase]).to.deep.equal([
      3, 5, 1, 1, 7, 3,
    ]);
    const live1h = await snapshot(live);
    await replayFromScratch(live, 100);
    expect(await snapshot(live)).to.deep.equal(live1h);
  });

  it('keeps the latest state by server time: an older server time or a backwards device clock does not regress it', async () => {
    const state = stateProjector();
    const temperature = (receivedAt: string, value: number, deviceTime?: string) => ({
      deviceId: DEVICE,
      receivedAt,
      readings: [{ capability: 'environment.temperature', value, ...(deviceTime && { deviceTime }) }],
    });
    await recordReadings(store, temperature('2026-06-01T10:00:00.000Z', 20, '2026-06-01T09:59:59.000Z'));
    await catchUpProjector(db.pool, store, state);
    // Later in the global order but stamped earlier by another ingest instance's clock: ignored.
    await recordReadings(store, temperature('2026-06-01T09:59:00.000Z', 19));
    // A later message whose device clock went backwards: serverTime decides, so it wins.
    await recordReadings(store, temperature('2026-06-01T10:05:00.000Z', 22, '2026-06-01T08:00:00.000Z'));
    await store.append(
      `device-${DEVICE}`,
      [
        {
          id: randomUUID(),
          type: 'DeviceConnectivityChanged',
          data: {
            deviceId: DEVICE,
            projectId: 'prj_test',
            connectivity: 'offline',
            observedAt: '2026-06-01T10:06:00.000Z',
            cause: 'last_will',
          },
        },
      ],
      'any',
    );
    await catchUpProjector(db.pool, store, state);
    const read = await readDeviceState(db.pool, DEVICE);
    expect(read.connectivity).to.equal('offline');
    expect(read.lastSeenAt?.toISOString()).to.equal('2026-06-01T10:05:00.000Z');
    expect(
      read.entries.map((e) => [e.value, e.deviceTime?.toISOString(), e.serverTime.toISOString()]),
    ).to.deep.equal([[22, '2026-06-01T08:00:00.000Z', '2026-06-01T10:05:00.000Z']]);
  });

  it('keeps the latest state by server time within one batch: a reading between two others does not win back', async () => {
    const state = stateProjector();
    const temperature = (receivedAt: string, value: number) => ({
      deviceId: DEVICE,
      receivedAt,
      readings: [{ capability: 'environment.temperature', value }],
    });
    // One batch, in global order: 10:00, then 10:05 (wins), then 10:02 (stamped by a slower clock: loses).
    await recordReadings(store, temperature('2026-06-01T10:00:00.000Z', 20));
    await recordReadings(store, temperature('2026-06-01T10:05:00.000Z', 25));
    await recordReadings(store, temperature('2026-06-01T10:02:00.000Z', 22));
    await catchUpProjector(db.pool, store, state);
    const read = await readDeviceState(db.pool, DEVICE);
    expect(read.entries.map((e) => [e.value, e.serverTime.toISOString()])).to.deep.equal([
      [25, '2026-06-01T10:05:00.000Z'],
    ]);
  });

  it("keeps a device clock's time as sent, to the microsecond and whatever year it claims", async () => {
    // Events written otherwise than by the ingestor (which writes milliseconds) may carry microseconds, and
    // a device's clock may be centuries off, even in year 0 (ISO 8601's 1 BC, which PostgreSQL's text input
    // refuses): its reading is then filed at server time, its claim kept.
    const claims = [
      '1650-01-01T00:00:00.000Z',
      '2026-06-01T09:59:59.123456Z',
      '2400-02-29T12:00:00.5Z',
      '0000-02-29T12:00:00.000Z',
      // Date.parse reads this fraction as .123: filed at .012, stored to the microsecond.
      '2026-06-01T09:59:58.0123456789Z',
    ];
    for (const [i, deviceTime] of claims.entries()) {
      await recordReadings(store, {
        deviceId: `${DEVICE}${i}`,
        siteId: SITE,
        receivedAt: '2026-06-01T10:00:00.000Z',
        readings: [{ capability: 'environment.temperature', value: 20 + i, deviceTime }],
      });
    }
    await catchUpProjector(db.pool, store, telemetryProjector());
    await catchUpProjector(db.pool, store, stateProjector());
    const text = `to_char(device_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z" BC') AS t, filed_at`;
    const raw = await db.pool.query(`SELECT device_id, ${text} FROM telemetry_raw ORDER BY device_id`);
    const stateRows = await db.pool.query(
      `SELECT device_id, ${text.replace(', filed_at', '')} FROM device_state ORDER BY device_id`,
    );
    const expected = [
      '1650-01-01T00:00:00.000000Z AD',
      '2026-06-01T09:59:59.123456Z AD',
      '2400-02-29T12:00:00.500000Z AD',
      '0001-02-29T12:00:00.000000Z BC',
      '2026-06-01T09:59:58.012346Z AD',
    ];
    expect(raw.rows.map((r) => r.t)).to.deep.equal(expected);
    expect(stateRows.rows.map((r) => r.t)).to.deep.equal(expected);
    expect(
      raw.rows.map((r) => (r.filed_at as Date).toISOString()),
      'implausible claims filed at server time, the plausible one at its own',
    ).to.deep.equal([
      '2026-06-01T10:00:00.000Z',
      '2026-06-01T09:59:59.123Z',
      '2026-06-01T10:00:00.000Z',
      '2026-06-01T10:00:00.000Z',
      '2026-06-01T09:59:58.012Z',
    ]);
  });

  it('builds the points in the database with exactly the values the domain computes, for every function but increase', async () => {
    const projector = telemetryProjector();
    // With numbers whose shortest decimal form JavaScript and PostgreSQL write differently (exponents).
    const values = [3.5, -1.25, 7, 0.5, 2.75, 11, -4, 1 / 3, 1e-7, 2.5e21, -0.000015];
    await recordReadings(
      store,
      ...values.map((value, i) => ({
        deviceId: DEVICE,
        siteId: SITE,
        receivedAt: new Date(Date.parse('2026-06-01T10:00:00Z') + i * 17 * 60_000).toISOString(),
        readings: [
          { capability: 'environment.temperature', value },
          { capability: 'water.leak', value: i % 3 === 0 },
        ],
      })),
    );
    await catchUpProjector(db.pool, store, projector);
    const window = {
      deviceId: DEVICE,
      from: new Date('2026-06-01T00:00:00Z'),
      to: new Date('2026-06-02T00:00:00Z'),
    };
    for (const resolution of ['1m', '1h', '1d'] as const) {
      for (const aggregation of TELEMETRY_AGGREGATIONS.filter((a) => a !== 'increase')) {
        const capabilities = ['water.leak', 'environment.temperature'];
        const fromStats = (await readBuckets(db.pool, { ...window, capabilities, resolution }))
          .sort((a, b) => capabilities.indexOf(a.capability) - capabilities.indexOf(b.capability))
          .map((b) => [
            b.capability,
            b.start.toISOString(),
            b.samples,
            pointValue(b, aggregation, undefined),
          ]);
        const served = new Map(capabilities.map((c) => [c, aggregation]));
        const points = JSON.parse(
          `[${await readPointsJson(db.pool, { ...window, resolution, served })}]`,
        ) as {
          capability_key: string;
          bucket: string;
          samples: number;
          value: number;
        }[];
        const fromDatabase = points.map((p) => [p.capability_key, p.bucket, p.samples, p.value]);
        expect(fromDatabase, `${resolution} ${aggregation}`).to.deep.equal(fromStats);
      }
    }
  });

  it('retention drops the partitions wholly older than each horizon, keeps the one it falls in, creates the next', async () => {
    const projector = telemetryProjector();
    await recordReadings(
      store,
      produced('2026-01-01T10:00:00.000Z', 1),
      produced('2026-05-01T10:00:00.000Z', 2),
      // Older than the raw and 1m horizons (05-23 12:00), but in the day partition the horizon falls in.
      produced('2026-05-23T10:00:00.000Z', 3),
      produced('2026-06-01T10:00:00.000Z', 4),
    );
    await catchUpProjector(db.pool, store, projector);
    const report = await applyTelemetryRetention(db.pool, {
      now: Date.parse('2026-06-02T12:00:00Z'),
      retention: { rawDays: 10, minuteDays: 10, hourDays: 60, dayDays: 100 },
    });
    expect(report.dropped).to.deep.equal([
      'telemetry_raw_20260101',
      'telemetry_raw_20260501',
      'telemetry_1m_20260101',
      'telemetry_1m_20260501',
      'telemetry_1h_202601',
      // Berlin's midnight of 1 January is 23:00 UTC on 31 December.
      'telemetry_1d_2025',
    ]);
    expect(report.deleted).to.deep.equal({});
    // Today's, tomorrow's and the next day's raw and 1m partitions; June and 2026 exist already.
    expect(report.created).to.equal(6);
    const count = async (table: string) =>
      (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
    // One batch spanning months of arrivals closed every minute it held: nothing is left pending.
    expect([
      await count('telemetry_raw'),
      await count('telemetry_1m'),
      await count('telemetry_1h'),
      await count('telemetry_1d'),
      await count('telemetry_pending'),
    ]).to.deep.equal([2, 2, 3, 3, 0]);
    expect(await attachedPartitions(db.pool, 'telemetry_raw')).to.deep.equal([
      'telemetry_raw_20260523',
      'telemetry_raw_20260601',
      'telemetry_raw_20260602',
      'telemetry_raw_20260603',
      'telemetry_raw_20260604',
    ]);

    // A replay of an expired reading finds its partition gone and creates it again; the next run drops it.
    const again = telemetryProjector('telemetry:again');
    await catchUpProjector(db.pool, store, again);
    expect(await count('telemetry_raw')).to.equal(6);
    const second = await applyTelemetryRetention(db.pool, {
      now: Date.parse('2026-06-02T12:00:00Z'),
      retention: { rawDays: 10, minuteDays: 10, hourDays: 60, dayDays: 100 },
    });
    expect(second.dropped).to.include.members(['telemetry_raw_20260101', 'telemetry_raw_20260501']);
    expect(await count('telemetry_raw')).to.equal(4);
  });

  it('retention rolls up the pending minutes of a silent device before it drops their partition', async () => {
    await recordReadings(
      store,
      produced('2026-05-01T10:00:30.000Z', 2),
      produced('2026-05-01T10:01:10.000Z', 3),
    );
    await catchUpProjector(db.pool, store, telemetryProjector());
    const hours = () =>
      readBuckets(db.pool, {
        deviceId: DEVICE,
        capabilities: ['energy.produced_today'],
        resolution: '1h',
        from: new Date('2026-05-01T00:00:00Z'),
        to: new Date('2026-05-02T00:00:00Z'),
      });
    const count = async (table: string) =>
      (await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
    // Both minutes pending, nothing stored of their hour: what a reader sees comes from the minutes.
    expect([await count('telemetry_pending'), await count('telemetry_1h')]).to.deep.equal([2, 0]);
    const read = await hours();
    expect(read.map((b) => [b.samples, b.first, b.last, b.increase])).to.deep.equal([[2, 2, 3, 1]]);

    const report = await applyTelemetryRetention(db.pool, {
      now: Date.parse('2026-06-02T12:00:00Z'),
      retention: { rawDays: 10, minuteDays: 10, hourDays: 60, dayDays: 100 },
    });
    expect(report.failed).to.deep.equal([]);
    expect(report.dropped).to.include('telemetry_1m_20260501');
    expect([await count('telemetry_1m'), await count('telemetry_pending')]).to.deep.equal([0, 0]);
    expect(await count('telemetry_1h'), 'the hour rolled up before its minutes went').to.equal(1);
    expect(await hours()).to.deep.equal(read);
  });

  it('after an upgrade, readings of a minute written before it reach its hour and day once', async () => {
    // As the version before left it: the minute folded into its hour and day, nothing pending, no cutoff.
    await recordReadings(store, produced('2026-05-01T10:00:10.000Z', 2));
    await catchUpProjector(db.pool, store, telemetryProjector());
    await inTransaction(db.pool, (client) => telemetryProjector().settle!(client));
    await db.pool.query(`
      UPDATE telemetry_applied SET rolled_before = NULL;
      DELETE FROM public.schema_migrations WHERE name LIKE '0405_%';`);
    await migrate(db.pool, EVENT_STORE_FUNCTIONS);
    const { rows } = await db.pool.query<{ rolled_before: string }>(
      'SELECT rolled_before FROM telemetry_applied',
    );
    expect(rows.map((r) => Number(r.rolled_before))).to.deep.equal([Date.parse('2026-05-01T10:01:00.000Z')]);

    // More of the same minute, after the upgrade: its hour gets it at once, and only once.
    await recordReadings(store, produced('2026-05-01T10:00:40.000Z', 3));
    await catchUpProjector(db.pool, store, telemetryProjector());
    const stored = await db.pool.query<{ samples: number }>('SELECT samples FROM telemetry_1h');
    expect(stored.rows.map((r) => r.samples)).to.deep.equal([2]);
    const [hour] = await readBuckets(db.pool, {
      deviceId: DEVICE,
      capabilities: ['energy.produced_today'],
      resolution: '1h',
      from: new Date('2026-05-01T10:00:00Z'),
      to: new Date('2026-05-01T11:00:00Z'),
    });
    expect([hour?.samples, hour?.first, hour?.last, hour?.increase]).to.deep.equal([2, 2, 3, 1]);
  });

  it('retention finishes a drop whose detach was interrupted, and drops a detached table left behind', async () => {
    await recordReadings(
      store,
      produced('2026-05-01T10:00:00.000Z', 1),
      produced('2026-05-02T10:00:00.000Z', 2),
      produced('2026-05-03T10:00:00.000Z', 3),
    );
    await catchUpProjector(db.pool, store, telemetryProjector());
    // As crashes would leave them: the 3rd's partition detached but not dropped, the 2nd's concurrent
    // detach interrupted. The 1st, still attached, sorts before the pending one: a table allows one
    // pending detach, so its own concurrent detach can only start once the pending one is finished.
    await db.pool.query('ALTER TABLE telemetry_raw DETACH PARTITION telemetry_raw_20260503');
    await interruptConcurrentDetach(db.pool, 'telemetry_raw', 'telemetry_raw_20260502');
    const report = await applyTelemetryRetention(db.pool, {
      now: Date.parse('2026-06-02T12:00:00Z'),
      retention: { rawDays: 10, minuteDays: 10, hourDays: 60, dayDays: 100 },
    });
    expect(report.failed).to.deep.equal([]);
    expect(report.dropped.slice(0, 3)).to.deep.equal([
      'telemetry_raw_20260502',
      'telemetry_raw_20260501',
      'telemetry_raw_20260503',
    ]);
    expect(await attachedPartitions(db.pool, 'telemetry_raw')).to.not.include.members([
      'telemetry_raw_20260502',
    ]);
    const { rows } = await db.pool.query(`SELECT to_regclass('telemetry_raw_20260503') AS left_behind`);
    expect(rows[0].left_behind).to.equal(null);
  });
});
