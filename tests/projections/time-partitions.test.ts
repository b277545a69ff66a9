import { expect } from 'chai';
import pg from 'pg';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { inTransaction } from '../../src/infra/postgres/pool.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { installProjector } from '../../src/projections/checkpoints.js';
import { telemetryProjector } from '../../src/projections/telemetry/projector.js';
import { applyTelemetryRetention } from '../../src/projections/telemetry/retention.js';
import {
  PARTITION_CHANGE_LOCK,
  PARTITIONED_TABLES,
  ensurePartitions,
  partitionEnd,
  partitionFor,
  partitionsFor,
} from '../../src/projections/telemetry/time-partitions.js';
import { DAY_MS } from '../../src/domain/time.js';
import { until } from '../support/edge-agent.js';
import { eventStoreForEachTest } from '../support/event-store.js';
import { attachedPartitions, interruptConcurrentDetach } from '../support/partitions.js';
import { recordReadings } from '../support/readings.js';

describe('telemetry tables partitioned by time', () => {
  describe('partition names and spans', () => {
    it('gives each table its span in UTC, and reads the end back from the name', () => {
      // 23:30 UTC on New Year's Eve is already next year here: local-time arithmetic would show.
      const zone = process.env.TZ;
      process.env.TZ = 'Pacific/Kiritimati';
      try {
        expect(new Date(Date.parse('2026-12-31T23:30:00Z')).getFullYear(), 'the zone took').to.equal(2027);
        const at = Date.parse('2026-12-31T23:30:00Z');
        const cases = [
          [
            PARTITIONED_TABLES.raw,
            'telemetry_raw_20261231',
            '2026-12-31T00:00:00.000Z',
            '2027-01-01T00:00:00.000Z',
          ],
          [
            PARTITIONED_TABLES['1m'],
            'telemetry_1m_20261231',
            '2026-12-31T00:00:00.000Z',
            '2027-01-01T00:00:00.000Z',
          ],
          [
            PARTITIONED_TABLES['1h'],
            'telemetry_1h_202612',
            '2026-12-01T00:00:00.000Z',
            '2027-01-01T00:00:00.000Z',
          ],
          [
            PARTITIONED_TABLES['1d'],
            'telemetry_1d_2026',
            '2026-01-01T00:00:00.000Z',
            '2027-01-01T00:00:00.000Z',
          ],
        ] as const;
        for (const [target, name, from, to] of cases) {
          const partition = partitionFor(target, at);
          expect([
            partition.name,
            new Date(partition.fromMs).toISOString(),
            new Date(partition.toMs).toISOString(),
          ]).to.deep.equal([name, from, to]);
          expect(partitionEnd(target, name)).to.equal(Date.parse(to));
        }
        expect(partitionEnd(PARTITIONED_TABLES['1h'], 'telemetry_1h_before_20261201')).to.equal(
          Date.parse('2026-12-01T00:00:00Z'),
        );
        // Names this module did not give are never taken for partitions.
        for (const name of [
          'telemetry_1h_2026',
          'telemetry_1h_20261201',
          'telemetry_1h_pkey',
          'telemetry_1m_202612',
        ])
          expect(
            partitionEnd(
              name.startsWith('telemetry_1m') ? PARTITIONED_TABLES['1m'] : PARTITIONED_TABLES['1h'],
              name,
            ),
          ).to.equal(undefined);
      } finally {
        if (zone === undefined) delete process.env.TZ;
        else process.env.TZ = zone;
      }
    });

    it('names each partition a batch needs once, however its rows are ordered', () => {
      const day = Date.parse('2026-03-01T00:00:00Z');
      const times = [day + 5, day - 5, day + 10, day - 1, day + DAY_MS + 1, day + 7];
      expect(partitionsFor(PARTITIONED_TABLES.raw, times).map((p) => p.name)).to.deep.equal([
        'telemetry_raw_20260301',
        'telemetry_raw_20260228',
        'telemetry_raw_20260302',
      ]);
      expect(partitionsFor(PARTITIONED_TABLES['1d'], times).map((p) => p.name)).to.deep.equal([
        'telemetry_1d_2026',
      ]);
    });
  });

  describe('in PostgreSQL', () => {
    const suite = eventStoreForEachTest({ idlePollMs: 50 });

    it('creates a missing partition once when several writers need it at the same moment', async () => {
      await installProjector(suite.db.pool, telemetryProjector());
      const needed = [partitionFor(PARTITIONED_TABLES.raw, Date.parse('2026-02-03T04:05:06Z'))];
      const holder = await suite.db.pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(PARTITION_CHANGE_LOCK, ['public']);
        const writers = [1, 2, 3].map(() =>
          inTransaction(suite.db.pool, (client) => ensurePartitions(client, needed)),
        );
        // All three found the partition missing and now queue for the lock: the race is on.
        await until('three writers waiting to create the partition', async () => {
          const { rows } = await suite.db.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
          );
          return rows[0]!.n === 3 ? true : undefined;
        });
        await holder.query('COMMIT');
        const created = await Promise.all(writers);
        expect(created.reduce((a, b) => a + b, 0)).to.equal(1);
      } finally {
        holder.release();
      }
      const { rows } = await suite.db.pool.query(
        `SELECT to_regclass('telemetry_raw_20260203')::text AS name`,
      );
      expect(rows[0].name).to.equal('telemetry_raw_20260203');
    });

    it('replaces what an interrupted retention run left under a needed name: a detached table, a pending detach', async () => {
      await installProjector(suite.db.pool, telemetryProjector());
      const days = ['2026-02-03T04:00:00Z', '2026-02-04T04:00:00Z'].map((t) =>
        partitionFor(PARTITIONED_TABLES.raw, Date.parse(t)),
      );
      await inTransaction(suite.db.pool, (client) => ensurePartitions(client, days));
      await suite.db.pool.query(`ALTER TABLE telemetry_raw DETACH PARTITION ${days[0]!.name}`);
      await interruptConcurrentDetach(suite.db.pool, 'telemetry_raw', days[1]!.name);
      // Rows routed to either day now find no partition.
      const insert = (at: string) =>
        suite.db.pool.query(
          `INSERT INTO telemetry_raw (device_id, filed_at, event_id, server_time, capabilities, reading_values)
           VALUES ('dev_a', $1, gen_random_uuid(), $1, '{environment.temperature}', '[1]')`,
          [at],
        );
      expect(await insert('2026-02-04T04:00:00Z').catch((e: { code?: string }) => e.code)).to.equal('23514');
      expect(await inTransaction(suite.db.pool, (client) => ensurePartitions(client, days))).to.equal(2);
      expect(await attachedPartitions(suite.db.pool, 'telemetry_raw')).to.deep.equal(days.map((d) => d.name));
      await insert('2026-02-03T04:00:00Z');
      await insert('2026-02-04T04:00:00Z');
    });

    it('migrates unpartitioned tables whole into a first partition, goes on after it, and expires it', async () => {
      const now = Date.now();
      const iso = (ms: number) => new Date(ms).toISOString();
      await suite.db.pool.query(OLD_SHAPE);
      await suite.db.pool.query(
        `INSERT INTO telemetry_raw (device_id, capability, filed_at, event_id, ordinal, value, server_time)
         SELECT 'dev_a', 'environment.temperature', t, gen_random_uuid(), 0, '20', t
           FROM unnest($1::timestamptz[]) AS t`,
        [[iso(now - 40 * DAY_MS), iso(now - 20 * DAY_MS), iso(now - 60_000)]],
      );
      await suite.db.pool.query(
        `INSERT INTO telemetry_1h VALUES ('dev_a', 'environment.temperature', $1, 1, 20, 20, 20, $1, 20, $1, 20, NULL)`,
        [iso(now - 500 * DAY_MS)],
      );
      // Both conversions run again, in order: partitioned by time (0311), then one row per instant (0403).
      await suite.db.pool.query(
        `DELETE FROM public.schema_migrations WHERE name LIKE '0311_%' OR name LIKE '0403_%'`,
      );
      // The bounds it writes must not depend on the session's time zone or date style.
      const odd = new pg.Pool({
        connectionString: suite.db.url,
        options: '-c TimeZone=Pacific/Kiritimati -c DateStyle=SQL,DMY',
      });
      try {
        await migrate(odd, EVENT_STORE_FUNCTIONS);
      } finally {
        await odd.end();
      }

      const tomorrow = new Date(partitionFor(PARTITIONED_TABLES.raw, now).toMs);
      const first = `telemetry_raw_before_${tomorrow.toISOString().slice(0, 10).replaceAll('-', '')}`;
      const { rows: shape } = await suite.db.pool.query(
        `SELECT c.relname, c.relkind::text FROM pg_class c
          WHERE c.relname IN ('telemetry_raw', 'telemetry_1m', 'telemetry_1h', 'telemetry_1d', $1) ORDER BY 1`,
        [first],
      );
      expect(shape).to.deep.equal([
        { relname: 'telemetry_1d', relkind: 'p' },
        { relname: 'telemetry_1h', relkind: 'p' },
        { relname: 'telemetry_1m', relkind: 'p' },
        { relname: 'telemetry_raw', relkind: 'p' },
        { relname: first, relkind: 'r' },
      ]);

      // The projector goes on with the converted tables: tomorrow's reading lands in a new partition, after
      // the converted rows in the order of application.
      await recordReadings(suite.store, {
        deviceId: 'dev_a',
        receivedAt: iso(tomorrow.getTime() + 3_600_000),
        readings: [{ capability: 'environment.temperature', value: 21 }],
      });
      await catchUpProjector(suite.db.pool, suite.store, telemetryProjector());
      const { rows: raw } = await suite.db.pool.query(
        `SELECT tableoid::regclass::text AS partition, applied::int FROM telemetry_raw ORDER BY applied`,
      );
      expect(raw.map((r) => r.partition)).to.deep.equal([
        first,
        first,
        first,
        partitionFor(PARTITIONED_TABLES.raw, tomorrow.getTime() + 1).name,
      ]);
      expect(raw.map((r) => r.applied)).to.deep.equal([1, 2, 3, 4]);

      const retention = { rawDays: 30, minuteDays: 35, hourDays: 400, dayDays: 3660 };
      const today = await applyTelemetryRetention(suite.db.pool, { retention, now, batchSize: 1 });
      expect(today.deleted).to.deep.equal({
        telemetry_raw: 1,
        telemetry_1m: 0,
        telemetry_1h: 1,
        telemetry_1d: 0,
      });
      expect(today.dropped).to.deep.equal([]);
      const later = await applyTelemetryRetention(suite.db.pool, {
        retention,
        now: tomorrow.getTime() + 31 * DAY_MS,
      });
      expect(later.dropped).to.include(first);
      const { rows: left } = await suite.db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM telemetry_raw',
      );
      expect(left[0]!.n).to.equal(0);
    });
  });
});

/** The telemetry tables as they were before migration 0311. */
const OLD_SHAPE = `
  CREATE TABLE telemetry_raw (
    device_id text COLLATE "C" NOT NULL, capability text COLLATE "C" NOT NULL, filed_at timestamptz NOT NULL,
    event_id uuid NOT NULL, ordinal integer NOT NULL, value jsonb NOT NULL, device_time timestamptz,
    server_time timestamptz NOT NULL, applied bigint GENERATED ALWAYS AS IDENTITY);
  CREATE INDEX telemetry_raw_series ON telemetry_raw (device_id, capability, filed_at);
  CREATE INDEX telemetry_raw_filed ON telemetry_raw USING brin (filed_at);
  CREATE TABLE telemetry_1m (
    device_id text COLLATE "C" NOT NULL, capability text COLLATE "C" NOT NULL, bucket_start timestamptz NOT NULL,
    samples integer NOT NULL, sum double precision NOT NULL, min double precision NOT NULL,
    max double precision NOT NULL, first_at timestamptz NOT NULL, first_value double precision NOT NULL,
    last_at timestamptz NOT NULL, last_value double precision NOT NULL, increase double precision,
    PRIMARY KEY (device_id, capability, bucket_start)) WITH (fillfactor = 80);
  CREATE INDEX telemetry_1m_start ON telemetry_1m USING brin (bucket_start);
  CREATE TABLE telemetry_1h (LIKE telemetry_1m INCLUDING ALL) WITH (fillfactor = 80);
  CREATE TABLE telemetry_1d (LIKE telemetry_1m INCLUDING ALL) WITH (fillfactor = 80);`;
