import { expect } from 'chai';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { telemetryProjector } from '../../src/projections/telemetry/projector.js';
import { readRawReadings } from '../../src/projections/telemetry/queries.js';
import { closeEventStore, openEventStore, type RunningEventStore } from '../support/event-store.js';
import { attachedPartitions } from '../support/partitions.js';
import { recordReadings } from '../support/readings.js';

/** telemetry_raw as migration 0311 left it: partitioned by day, one row per reading. */
const PER_READING_SHAPE = `
  CREATE TABLE telemetry_raw (
    device_id text COLLATE "C" NOT NULL, capability text COLLATE "C" NOT NULL, filed_at timestamptz NOT NULL,
    event_id uuid NOT NULL, ordinal integer NOT NULL, value jsonb NOT NULL, device_time timestamptz,
    server_time timestamptz NOT NULL, applied bigint GENERATED ALWAYS AS IDENTITY) PARTITION BY RANGE (filed_at);
  CREATE INDEX telemetry_raw_series ON telemetry_raw (device_id, capability, filed_at);
  CREATE TABLE telemetry_raw_before_20260502 PARTITION OF telemetry_raw
    FOR VALUES FROM (MINVALUE) TO ('2026-05-02T00:00:00Z');
  CREATE INDEX telemetry_raw_before_20260502_filed ON telemetry_raw_before_20260502 USING brin (filed_at);
  CREATE TABLE telemetry_raw_20260502 PARTITION OF telemetry_raw
    FOR VALUES FROM ('2026-05-02T00:00:00Z') TO ('2026-05-03T00:00:00Z');`;

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const C = '00000000-0000-4000-8000-00000000000c';

describe('migration 0403: telemetry_raw from one row per reading to one row per instant', () => {
  let running: RunningEventStore;
  beforeEach(async () => {
    running = await openEventStore();
  });
  afterEach(async () => {
    await closeEventStore(running);
  });

  it('regroups every reading under its partition, keeps its order of application, and goes on after it', async () => {
    const { db, store } = running;
    const readDeviceA = () =>
      readRawReadings(db.pool, {
        deviceId: 'dev_a',
        capabilities: ['environment.temperature', 'binary.switch', 'evse.state'],
        from: new Date('2026-04-01T00:00:00Z'),
        to: new Date('2026-06-01T00:00:00Z'),
        limit: 100,
      });
    await db.pool.query(PER_READING_SHAPE);
    // In order of application: message A's three readings, of which the second has its own device time;
    // then B, filed a day earlier (the converted first partition); then C, whose readings came in reverse
    // ordinal order.
    await db.pool.query(
      `INSERT INTO telemetry_raw (device_id, capability, filed_at, event_id, ordinal, value, device_time, server_time)
       VALUES ('dev_a', 'environment.temperature', '2026-05-02T10:00:00Z', $1, 0, '21.5', '2026-05-02T10:00:00Z', '2026-05-02T10:00:01Z'),
              ('dev_a', 'binary.switch', '2026-05-02T09:59:50Z', $1, 1, 'true', '2026-05-02T09:59:50Z', '2026-05-02T10:00:01Z'),
              ('dev_a', 'evse.state', '2026-05-02T10:00:00Z', $1, 2, '"charging"', '2026-05-02T10:00:00Z', '2026-05-02T10:00:01Z'),
              ('dev_a', 'environment.temperature', '2026-05-01T08:00:00Z', $2, 0, '19', NULL, '2026-05-01T08:00:00Z'),
              ('dev_b', 'electrical.energy_import', '2026-05-02T11:00:00Z', $3, 1, '1200', NULL, '2026-05-02T11:00:00Z'),
              ('dev_b', 'environment.temperature', '2026-05-02T11:00:00Z', $3, 0, '18', NULL, '2026-05-02T11:00:00Z')`,
      [A, B, C],
    );
    const before = await readDeviceA().catch((e: Error) => e);
    expect(before, 'the service cannot read the old shape').to.be.instanceOf(Error);

    await db.pool.query(`DELETE FROM public.schema_migrations WHERE name LIKE '0403_%'`);
    const { applied } = await migrate(db.pool);
    expect(applied).to.deep.equal(['0403_telemetry_raw_one_row_per_instant.sql']);

    expect(await attachedPartitions(db.pool, 'telemetry_raw')).to.have.members([
      'telemetry_raw_20260502',
      'telemetry_raw_before_20260502',
    ]);
    const { rows: brin } = await db.pool.query(
      `SELECT 1 FROM pg_indexes WHERE tablename = 'telemetry_raw_before_20260502' AND indexdef LIKE '%brin%'`,
    );
    expect(brin, 'the first partition keeps its BRIN index for batched deletes').to.have.length(1);
    const { rows: leftover } = await db.pool.query(
      `SELECT c.relname FROM pg_class c WHERE c.relname LIKE '%per_reading%'`,
    );
    expect(leftover).to.deep.equal([]);

    const { rows } = await db.pool.query(
      `SELECT tableoid::regclass::text AS partition, device_id, event_id, capabilities, reading_values,
              applied::int
         FROM telemetry_raw ORDER BY applied`,
    );
    expect(rows).to.deep.equal([
      {
        partition: 'telemetry_raw_20260502',
        device_id: 'dev_a',
        event_id: A,
        capabilities: ['environment.temperature', 'evse.state'],
        reading_values: [21.5, 'charging'],
        applied: 1,
      },
      {
        partition: 'telemetry_raw_20260502',
        device_id: 'dev_a',
        event_id: A,
        capabilities: ['binary.switch'],
        reading_values: [true],
        applied: 2,
      },
      {
        partition: 'telemetry_raw_before_20260502',
        device_id: 'dev_a',
        event_id: B,
        capabilities: ['environment.temperature'],
        reading_values: [19],
        applied: 4,
      },
      {
        partition: 'telemetry_raw_20260502',
        device_id: 'dev_b',
        event_id: C,
        capabilities: ['environment.temperature', 'electrical.energy_import'],
        reading_values: [18, 1200],
        applied: 5,
      },
    ]);

    const after = await readDeviceA();
    expect(
      after.map((r) => [r.capability, r.filedAt.toISOString(), r.value, r.deviceTime?.toISOString()]),
    ).to.deep.equal([
      ['environment.temperature', '2026-05-01T08:00:00.000Z', 19, undefined],
      ['binary.switch', '2026-05-02T09:59:50.000Z', true, '2026-05-02T09:59:50.000Z'],
      ['environment.temperature', '2026-05-02T10:00:00.000Z', 21.5, '2026-05-02T10:00:00.000Z'],
      ['evse.state', '2026-05-02T10:00:00.000Z', 'charging', '2026-05-02T10:00:00.000Z'],
    ]);

    // The projector goes on with the converted table, after the converted rows in the order of application.
    await recordReadings(store, {
      deviceId: 'dev_a',
      receivedAt: '2026-05-02T12:00:00.000Z',
      readings: [
        { capability: 'environment.temperature', value: 22 },
        { capability: 'binary.switch', value: false },
      ],
    });
    await catchUpProjector(db.pool, store, telemetryProjector());
    const { rows: last } = await db.pool.query(
      `SELECT capabilities, reading_values, applied::int FROM telemetry_raw ORDER BY applied DESC LIMIT 1`,
    );
    expect(last).to.deep.equal([
      { capabilities: ['environment.temperature', 'binary.switch'], reading_values: [22, false], applied: 6 },
    ]);

    // A second run finds the new shape and changes nothing.
    await db.pool.query(`DELETE FROM public.schema_migrations WHERE name LIKE '0403_%'`);
    await migrate(db.pool);
    const { rows: count } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM telemetry_raw',
    );
    expect(count[0]!.n).to.equal(5);
  });
});
