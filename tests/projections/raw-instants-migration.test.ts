import { expect } from 'chai';
import pg from 'pg';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { inTransaction } from '../../src/infra/postgres/pool.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { telemetryProjector } from '../../src/projections/telemetry/projector.js';
import { readRawReadings } from '../../src/projections/telemetry/queries.js';
import { closeEventStore, openEventStore, type RunningEventStore } from '../support/event-store.js';
import { interruptConcurrentDetach } from '../support/partitions.js';
import { recordReadings } from '../support/readings.js';

/** telemetry_raw as migration 0311 left it: partitioned by day, one row per reading. */
const PER_READING_SHAPE = `
  CREATE TABLE telemetry_raw (
    device_id text COLLATE "C" NOT NULL, capability text COLLATE "C" NOT NULL, filed_at timestamptz NOT NULL,
    event_id uuid NOT NULL, ordinal integer NOT NULL, value jsonb NOT NULL, device_time timestamptz,
    server_time timestamptz NOT NULL, applied bigint GENERATED ALWAYS AS IDENTITY) PARTITION BY RANGE (filed_at);
  CREATE INDEX telemetry_raw_series ON telemetry_raw (device_id, capability, filed_at);
  CREATE TABLE telemetry_raw_before_20260501 PARTITION OF telemetry_raw
    FOR VALUES FROM (MINVALUE) TO ('2026-05-01T00:00:00Z');
  CREATE INDEX telemetry_raw_before_20260501_filed ON telemetry_raw_before_20260501 USING brin (filed_at);
  CREATE TABLE telemetry_raw_20260501 PARTITION OF telemetry_raw
    FOR VALUES FROM ('2026-05-01T00:00:00Z') TO ('2026-05-02T00:00:00Z');
  CREATE TABLE telemetry_raw_20260502 PARTITION OF telemetry_raw
    FOR VALUES FROM ('2026-05-02T00:00:00Z') TO ('2026-05-03T00:00:00Z');`;

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const C = '00000000-0000-4000-8000-00000000000c';
const D = '00000000-0000-4000-8000-00000000000d';

describe('migration 0403: telemetry_raw from one row per reading to one row per instant', () => {
  let running: RunningEventStore;
  beforeEach(async () => {
    running = await openEventStore();
  });
  afterEach(async () => {
    await closeEventStore(running);
  });

  it('regroups neighbouring readings under their partition, keeps their order of application, and goes on after it', async () => {
    const { db, store } = running;
    const readDeviceA = () =>
      readRawReadings(db.pool, {
        deviceId: 'dev_a',
        capabilities: ['environment.temperature', 'environment.humidity', 'binary.switch', 'evse.state'],
        from: new Date('2026-04-01T00:00:00Z'),
        to: new Date('2026-06-01T00:00:00Z'),
        limit: 100,
      });
    await db.pool.query(PER_READING_SHAPE);
    // In order of application: message A's four readings, of which the third has its own device time; B,
    // in the converted first partition; C, whose readings came in reverse ordinal order; D, whose readings
    // are all filed at its server time, the middle one with an implausible device time of its own.
    await db.pool.query(
      `INSERT INTO telemetry_raw (device_id, capability, filed_at, event_id, ordinal, value, device_time, server_time)
       VALUES ('dev_a', 'environment.temperature', '2026-05-02T10:00:00Z', $1, 0, '21.5', '2026-05-02T10:00:00Z', '2026-05-02T10:00:01Z'),
              ('dev_a', 'environment.humidity', '2026-05-02T10:00:00Z', $1, 1, '40', '2026-05-02T10:00:00Z', '2026-05-02T10:00:01Z'),
              ('dev_a', 'binary.switch', '2026-05-02T09:59:50Z', $1, 2, 'true', '2026-05-02T09:59:50Z', '2026-05-02T10:00:01Z'),
              ('dev_a', 'evse.state', '2026-05-02T10:00:00Z', $1, 3, '"charging"', '2026-05-02T10:00:00Z', '2026-05-02T10:00:01Z'),
              ('dev_a', 'environment.temperature', '2026-04-30T08:00:00Z', $2, 0, '19', NULL, '2026-04-30T08:00:00Z'),
              ('dev_b', 'electrical.energy_import', '2026-05-02T11:00:00Z', $3, 1, '1200', NULL, '2026-05-02T11:00:00Z'),
              ('dev_b', 'environment.temperature', '2026-05-02T11:00:00Z', $3, 0, '18', NULL, '2026-05-02T11:00:00Z'),
              ('dev_a', 'environment.temperature', '2026-05-01T12:00:00Z', $4, 0, '20', NULL, '2026-05-01T12:00:00Z'),
              ('dev_a', 'binary.switch', '2026-05-01T12:00:00Z', $4, 1, 'false', '2026-05-01T13:00:00Z', '2026-05-01T12:00:00Z'),
              ('dev_a', 'environment.humidity', '2026-05-01T12:00:00Z', $4, 2, '41', NULL, '2026-05-01T12:00:00Z')`,
      [A, B, C, D],
    );
    expect(
      await readDeviceA().catch((e: Error) => e),
      'the service cannot read the old shape',
    ).to.be.instanceOf(Error);
    // What the projector's schema would add if it ran first; and a retention run interrupted mid-detach.
    await db.pool.query(
      'CREATE INDEX IF NOT EXISTS telemetry_raw_instants ON telemetry_raw (device_id, filed_at)',
    );
    await interruptConcurrentDetach(db.pool, 'telemetry_raw', 'telemetry_raw_20260501');

    await db.pool.query(`DELETE FROM public.schema_migrations WHERE name LIKE '0403_%'`);
    // The bounds it reads back must not move with the session's time zone (CST is also US Central).
    const odd = new pg.Pool({
      connectionString: db.url,
      options: '-c TimeZone=Asia/Shanghai -c DateStyle=SQL,DMY',
    });
    try {
      const { applied } = await migrate(odd, EVENT_STORE_FUNCTIONS);
      expect(applied).to.deep.equal(['0403_telemetry_raw_one_row_per_instant.sql']);
    } finally {
      await odd.end();
    }

    // Read in UTC whatever the server's default zone, so the expected text is fixed.
    const { rows: bounds } = await inTransaction(db.pool, async (client) => {
      await client.query(`SET LOCAL TimeZone = 'UTC'`);
      await client.query(`SET LOCAL DateStyle = 'ISO, YMD'`);
      return client.query(
        `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'telemetry_raw'::regclass ORDER BY 1`,
      );
    });
    expect(bounds).to.deep.equal([
      {
        name: 'telemetry_raw_20260501',
        bound: "FOR VALUES FROM ('2026-05-01 00:00:00+00') TO ('2026-05-02 00:00:00+00')",
      },
      {
        name: 'telemetry_raw_20260502',
        bound: "FOR VALUES FROM ('2026-05-02 00:00:00+00') TO ('2026-05-03 00:00:00+00')",
      },
      {
        name: 'telemetry_raw_before_20260501',
        bound: "FOR VALUES FROM (MINVALUE) TO ('2026-05-01 00:00:00+00')",
      },
    ]);
    const { rows: indexes } = await db.pool.query(
      `SELECT tablename, indexdef LIKE '%brin%' AS brin FROM pg_indexes
        WHERE tablename LIKE 'telemetry_raw%' ORDER BY tablename, brin`,
    );
    expect(indexes, 'the first partition keeps a BRIN index for batched deletes').to.deep.equal([
      { tablename: 'telemetry_raw', brin: false },
      { tablename: 'telemetry_raw_20260501', brin: false },
      { tablename: 'telemetry_raw_20260502', brin: false },
      { tablename: 'telemetry_raw_before_20260501', brin: false },
      { tablename: 'telemetry_raw_before_20260501', brin: true },
    ]);
    const { rows: leftover } = await db.pool.query(
      `SELECT relname FROM pg_class WHERE relname LIKE '%per_reading%'`,
    );
    expect(leftover).to.deep.equal([]);

    const { rows } = await db.pool.query(
      `SELECT tableoid::regclass::text AS partition, event_id, capabilities, reading_values, applied::int
         FROM telemetry_raw ORDER BY applied`,
    );
    const row = (
      partition: string,
      event: string,
      capabilities: string[],
      values: unknown[],
      applied: number,
    ) => ({
      partition: `telemetry_raw_${partition}`,
      event_id: event,
      capabilities,
      reading_values: values,
      applied,
    });
    expect(rows).to.deep.equal([
      row('20260502', A, ['environment.temperature', 'environment.humidity'], [21.5, 40], 1),
      row('20260502', A, ['binary.switch'], [true], 3),
      row('20260502', A, ['evse.state'], ['charging'], 4),
      row('before_20260501', B, ['environment.temperature'], [19], 5),
      row('20260502', C, ['environment.temperature', 'electrical.energy_import'], [18, 1200], 6),
      row('20260501', D, ['environment.temperature'], [20], 8),
      row('20260501', D, ['binary.switch'], [false], 9),
      row('20260501', D, ['environment.humidity'], [41], 10),
    ]);

    // As resolution=raw reads them: filing time, then order of application, then place in the message.
    const after = await readDeviceA();
    expect(
      after.map((r) => [r.filedAt.toISOString(), r.capability, r.value, r.deviceTime?.toISOString()]),
    ).to.deep.equal([
      ['2026-04-30T08:00:00.000Z', 'environment.temperature', 19, undefined],
      ['2026-05-01T12:00:00.000Z', 'environment.temperature', 20, undefined],
      ['2026-05-01T12:00:00.000Z', 'binary.switch', false, '2026-05-01T13:00:00.000Z'],
      ['2026-05-01T12:00:00.000Z', 'environment.humidity', 41, undefined],
      ['2026-05-02T09:59:50.000Z', 'binary.switch', true, '2026-05-02T09:59:50.000Z'],
      ['2026-05-02T10:00:00.000Z', 'environment.temperature', 21.5, '2026-05-02T10:00:00.000Z'],
      ['2026-05-02T10:00:00.000Z', 'environment.humidity', 40, '2026-05-02T10:00:00.000Z'],
      ['2026-05-02T10:00:00.000Z', 'evse.state', 'charging', '2026-05-02T10:00:00.000Z'],
    ]);

    // The projector goes on with the converted table, after the converted rows in the order of application,
    // and makes the same rows of a message like D.
    await recordReadings(store, {
      deviceId: 'dev_a',
      receivedAt: '2026-05-02T12:00:00.000Z',
      readings: [
        { capability: 'environment.temperature', value: 22 },
        { capability: 'binary.switch', value: false, deviceTime: '2026-05-02T13:00:00.000Z' },
        { capability: 'environment.humidity', value: 42 },
      ],
    });
    await catchUpProjector(db.pool, store, telemetryProjector());
    const { rows: last } = await db.pool.query(
      `SELECT capabilities, reading_values, applied::int FROM telemetry_raw WHERE applied > 10 ORDER BY applied`,
    );
    expect(last).to.deep.equal([
      { capabilities: ['environment.temperature'], reading_values: [22], applied: 11 },
      { capabilities: ['binary.switch'], reading_values: [false], applied: 12 },
      { capabilities: ['environment.humidity'], reading_values: [42], applied: 13 },
    ]);

    // A second run finds the new shape and changes nothing.
    await db.pool.query(`DELETE FROM public.schema_migrations WHERE name LIKE '0403_%'`);
    await migrate(db.pool, EVENT_STORE_FUNCTIONS);
    const { rows: count } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM telemetry_raw',
    );
    expect(count[0]!.n).to.equal(11);
  });
});
