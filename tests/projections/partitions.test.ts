import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import type { RecordedEvent } from '../../src/eventstore/port.js';
import { migrate } from '../../src/infra/postgres/migrate.js';
import { EVENT_STORE_FUNCTIONS } from '../../src/eventstore/postgres/functions/install-order.js';
import { createPool } from '../../src/infra/postgres/pool.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import {
  installProjector,
  readCheckpoint,
  recordedPartitionCount,
} from '../../src/projections/checkpoints.js';
import { PartitionShare } from '../../src/projections/partition-share.js';
import { PartitionsInUse, repartition } from '../../src/projections/partitioning.js';
import {
  partitionIndex,
  partitionOfName,
  partitionsOf,
  type PartitionableProjector,
} from '../../src/projections/partitions.js';
import type { Projector } from '../../src/projections/projector.js';
import { inSchema, replayIntoSchema } from '../../src/projections/replay.js';
import { runProjector } from '../../src/projections/runner.js';
import { stateFamily } from '../../src/projections/state/projector.js';
import { telemetryFamily } from '../../src/projections/telemetry/projector.js';
import { COUNT_RAW_READINGS } from '../../src/projections/telemetry/sql.js';
import { devcloud } from '../support/devcloud.js';
import { eventStoreForEachTest, eventStoreOver } from '../support/event-store.js';
import { recordReadings } from '../support/readings.js';

const DEVICES = Array.from({ length: 24 }, (_, i) => `dev_part${String(i).padStart(2, '0')}`);
const SITES = { site_berlin: 'Europe/Berlin', site_lisbon: 'Europe/Lisbon' } as const;

function recorded(type: string, data: Record<string, unknown>, n: number): RecordedEvent {
  return {
    id: randomUUID(),
    type,
    data,
    metadata: {},
    streamName: `s-${n}`,
    revision: 0n,
    position: String(n).padStart(8, '0'),
    recordedAt: new Date(0),
  };
}

describe('partitioned projectors: which partition applies which event', () => {
  const seen = new Map<string, RecordedEvent[]>();
  const family: PartitionableProjector = {
    family: 'probe',
    create: (name) => ({
      name,
      version: 1,
      eventTypes: ['Probed', 'Broadcast'],
      tables: [],
      schemaSql: '',
      async apply(events) {
        seen.set(name, [...(seen.get(name) ?? []), ...events]);
      },
    }),
    keyOf: (event) => (event.type === 'Broadcast' ? undefined : (event.data as { key: string }).key),
  };

  it('gives each keyed event to exactly one partition, in order, and an unkeyed event to every partition', async () => {
    seen.clear();
    const events = [
      ...DEVICES.map((key, n) => recorded('Probed', { key }, n)),
      recorded('Broadcast', {}, 100),
      ...DEVICES.map((key, n) => recorded('Probed', { key }, 200 + n)),
    ];
    const partitions = partitionsOf(family, 4);
    expect(partitions.map((p) => p.name)).to.deep.equal(['probe:0/4', 'probe:1/4', 'probe:2/4', 'probe:3/4']);
    for (const partition of partitions) await partition.apply(events, undefined as never);

    const owners = new Map<string, Set<string>>();
    for (const [name, applied] of seen) {
      expect(
        applied.filter((e) => e.type === 'Broadcast'),
        name,
      ).to.have.length(1);
      const positions = applied.map((e) => e.position);
      expect(positions, `${name} keeps the global order`).to.deep.equal([...positions].sort());
      for (const e of applied.filter((x) => x.type === 'Probed')) {
        const key = (e.data as { key: string }).key;
        owners.set(key, (owners.get(key) ?? new Set()).add(name));
        expect(partitionOfName(name).index).to.equal(partitionIndex(key, 4));
      }
    }
    expect(
      [...owners.values()].every((names) => names.size === 1),
      'one partition per key',
    ).to.equal(true);
    expect(owners.size).to.equal(DEVICES.length);
    // 24 keys over 4 partitions: a hash that put them all in one would defeat the purpose.
    expect(seen.size, 'partitions that received keyed events').to.equal(4);
  });

  it('keeps the family name for one partition and parses partition names back', () => {
    expect(partitionsOf(family, 1).map((p) => [p.name, p.partition])).to.deep.equal([['probe', undefined]]);
    expect(partitionOfName('telemetry:3/8')).to.deep.equal({ family: 'telemetry', index: 3, count: 8 });
    expect(partitionOfName('telemetry')).to.deep.equal({ family: 'telemetry', index: 0, count: 1 });
    expect(() => partitionsOf(family, 0)).to.throw(RangeError);
    expect(() => partitionsOf(family, 65)).to.throw(RangeError);
    // The hash is part of the stored layout: a change would move devices between partitions mid-stream.
    // These are 32-bit FNV-1a values computed independently of this code.
    expect(['dev_a', 'dev_b', 'dev_meter01'].map((k) => partitionIndex(k, 16))).to.deep.equal([8, 1, 1]);
  });
});

describe('partitioned projectors on PostgreSQL', () => {
  const suite = eventStoreForEachTest({ idlePollMs: 30 });

  async function createSites() {
    for (const [siteId, timezone] of Object.entries(SITES)) {
      await suite.store.append(
        `site-${siteId}`,
        [
          {
            id: randomUUID(),
            type: 'SiteCreated',
            data: { siteId, projectId: 'prj_test', name: siteId, timezone },
          },
        ],
        'no_stream',
      );
    }
  }

  /** One message per device at `minute`: a counter, a temperature, a state text; every third device late. */
  async function readingsAt(minute: number) {
    await recordReadings(
      suite.store,
      ...DEVICES.map((deviceId, d) => {
        const at = new Date(Date.UTC(2026, 2, 29, 0, minute, d)).toISOString();
        const late = d % 3 === 0 ? new Date(Date.UTC(2026, 2, 28, 23, 59, 30)).toISOString() : undefined;
        return {
          deviceId,
          siteId: d % 2 === 0 ? 'site_berlin' : 'site_lisbon',
          receivedAt: at,
          readings: [
            {
              capability: 'energy.produced_today',
              value: minute * 10 + d,
              ...(late && { deviceTime: late }),
            },
            { capability: 'environment.temperature', value: 20 + (d % 5) },
            { capability: 'evse.state', value: minute % 2 ? 'charging' : 'idle' },
          ],
        };
      }),
    );
    await suite.store.append(
      `connectivity-${DEVICES[minute % DEVICES.length]}`,
      [
        {
          id: randomUUID(),
          type: 'DeviceConnectivityChanged',
          data: {
            deviceId: DEVICES[minute % DEVICES.length],
            projectId: 'prj_test',
            connectivity: minute % 2 ? 'offline' : 'online',
            observedAt: new Date(Date.UTC(2026, 2, 29, 0, minute, 59)).toISOString(),
          },
        },
      ],
      'any',
    );
  }

  /**
   * Every row of the family's read-model tables, sorted, once settled (what batches of other sizes leave
   * pending rolled up); the bookkeeping of applied positions left out.
   */
  async function snapshot(projector: Projector, schema = 'public') {
    if (projector.settle) await inSchema(suite.db.pool, schema, (client) => projector.settle!(client));
    const tables: Record<string, string[]> = {};
    for (const table of projector.tables.filter((t) => t !== 'telemetry_applied')) {
      const { rows } = await suite.db.pool.query(`SELECT * FROM ${schema}.${table}`);
      tables[table] = rows
        .map(({ applied: _a, ...row }: Record<string, unknown>) => JSON.stringify(row))
        .sort();
    }
    return tables;
  }

  async function singleProcessReplay(family: PartitionableProjector) {
    const whole = family.create(family.family);
    await replayIntoSchema(suite.db.pool, suite.store, whole, `whole_${family.family}`, { batchSize: 7 });
    return snapshot(whole, `whole_${family.family}`);
  }

  async function catchUpAll(projectors: readonly Projector[]) {
    for (const projector of projectors) {
      await installProjector(suite.db.pool, projector);
      await catchUpProjector(suite.db.pool, suite.store, projector, 13);
    }
  }

  it('fills the same state and telemetry tables in 4 partitions as one projector does', async () => {
    await createSites();
    for (let minute = 0; minute < 6; minute++) await readingsAt(minute);
    for (const family of [stateFamily, telemetryFamily]) {
      const partitions = partitionsOf(family, 4);
      await catchUpAll(partitions);
      const whole = await singleProcessReplay(family);
      expect(Object.values(whole).flat(), `${family.family} has rows`).to.not.have.length(0);
      expect(await snapshot(partitions[0]!), family.family).to.deep.equal(whole);
    }
  });

  it('repartitions 1 -> 4 -> 2 -> 1 between appends without losing or repeating a reading', async () => {
    await createSites();
    let messages = 0;
    for (const [step, count] of [4, 2, 1].entries()) {
      await readingsAt(step * 2);
      await readingsAt(step * 2 + 1);
      messages += 2 * DEVICES.length;
      const before = partitionsOf(telemetryFamily, step === 0 ? 1 : [4, 2][step - 1]!);
      // The old partitions stop at different places: one is up to date, the others behind.
      await catchUpAll(before.slice(0, 1));
      for (const projector of before.slice(1)) await installProjector(suite.db.pool, projector);
      const behind = await readCheckpoint(suite.db.pool, before.at(-1)!.name);
      const ahead = await readCheckpoint(suite.db.pool, before[0]!.name);
      if (before.length > 1) expect(behind?.position, 'old partitions differ').to.not.equal(ahead?.position);

      const done = await repartition(suite.db.pool, suite.db.locks, suite.store, telemetryFamily, count, {
        batchSize: 5,
      });
      expect(done).to.include({ to: count });
      expect(await recordedPartitionCount(suite.db.pool, 'telemetry')).to.equal(count);
      const after = partitionsOf(telemetryFamily, count);
      for (const projector of after)
        expect((await readCheckpoint(suite.db.pool, projector.name))?.position).to.equal(done.position);
      await catchUpAll(after);
      const { rows } = await suite.db.pool.query<{ n: number }>(COUNT_RAW_READINGS);
      expect(rows[0]!.n, `raw readings after repartitioning to ${count}`).to.equal(messages * 3);
      expect(await snapshot(after[0]!)).to.deep.equal(await singleProcessReplay(telemetryFamily));
    }
  });

  it('migrates the one applied position of an unpartitioned telemetry read model to its name', async () => {
    await suite.db.pool.query(`
      CREATE TABLE telemetry_applied (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        position text COLLATE "C" NOT NULL
      );
      INSERT INTO telemetry_applied (singleton, position) VALUES (true, '00000000000000420000000000000001');
      DELETE FROM public.schema_migrations WHERE name LIKE '0310_%' OR name LIKE '0405_%';`);
    await migrate(suite.db.pool, EVENT_STORE_FUNCTIONS);
    const { rows } = await suite.db.pool.query('SELECT projector, position FROM telemetry_applied');
    expect(rows).to.deep.equal([{ projector: 'telemetry', position: '00000000000000420000000000000001' }]);
    // The projector's own schema then finds the table in its shape, and each partition keeps its own row.
    for (const projector of partitionsOf(telemetryFamily, 2))
      await installProjector(suite.db.pool, projector);
    const columns = await suite.db.pool.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'telemetry_applied' ORDER BY 1`,
    );
    expect(columns.rows.map((r) => r.column_name)).to.deep.equal(['position', 'projector', 'rolled_before']);
  });

  it('refuses to repartition while a process still projects a partition, and changes nothing', async () => {
    await createSites();
    await readingsAt(0);
    await catchUpAll(partitionsOf(stateFamily, 2));
    const holder = await suite.db.locks.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(hashtext($1))', ['projector:state:1/2']);
      const refused = await repartition(suite.db.pool, suite.db.locks, suite.store, stateFamily, 4, {
        batchSize: 50,
      }).catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(PartitionsInUse).and.have.property('projector', 'state:1/2');
      expect(await recordedPartitionCount(suite.db.pool, 'state')).to.equal(2);
    } finally {
      holder.release(true);
    }
    // A process started with another count neither projects nor records a second set of checkpoints.
    for (const projector of partitionsOf(stateFamily, 3)) await installProjector(suite.db.pool, projector);
    expect(await readCheckpoint(suite.db.pool, 'state:0/3')).to.equal(undefined);
  });

  it('devcloud projections partition: changes the count, refuses a light read model, a bad count and a busy one', async function () {
    // Seven CLI processes, each starting Node and tsx: 17-21 s on a 2-core CI machine running both test legs.
    this.timeout(120_000);
    await createSites();
    await readingsAt(0);
    await catchUpAll(partitionsOf(telemetryFamily, 1));
    const changed = await devcloud({ db: suite.db }, 'projections', 'partition', 'telemetry', '4', '--json');
    expect(changed.code, changed.stderr).to.equal(0);
    const result = JSON.parse(changed.stdout) as { from: number; to: number; position: string };
    expect(result).to.include({ projector: 'telemetry', from: 1, to: 4 });
    expect(result.position).to.equal((await readCheckpoint(suite.db.pool, 'telemetry:3/4'))?.position);
    expect(await readCheckpoint(suite.db.pool, 'telemetry')).to.equal(undefined);

    // Refusals that change nothing (the count is still 4 at the end): their CLI runs, seconds of start-up
    // each, go side by side.
    const badCounts = ['0', '65', '2.5', 'two'];
    const [light, ...bad] = await Promise.all([
      devcloud({ db: suite.db }, 'projections', 'partition', 'devices', '2'),
      ...badCounts.map((count) => devcloud({ db: suite.db }, 'projections', 'partition', 'telemetry', count)),
    ]);
    expect(light).to.deep.include({ code: 1, stdout: '' });
    expect(light!.stderr).to.equal('devcloud: devices cannot be partitioned; these can: state, telemetry\n');
    badCounts.forEach((count, i) =>
      expect(bad[i]!.stderr, count).to.equal('devcloud: COUNT must be a whole number from 1 to 64\n'),
    );
    const holder = await suite.db.locks.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(hashtext($1))', ['projector:telemetry:2/4']);
      const busy = await devcloud({ db: suite.db }, 'projections', 'partition', 'telemetry', '2');
      expect(busy.code).to.equal(1);
      expect(busy.stderr).to.equal(
        'devcloud: telemetry:2/4 is being projected by a running process: stop every projector process first\n',
      );
    } finally {
      holder.release(true);
    }
    expect(await recordedPartitionCount(suite.db.pool, 'telemetry')).to.equal(4);
  });

  it("shares 4 partitions between two processes and hands a dead one's partitions over", async () => {
    await createSites();
    await readingsAt(0);
    const processes = ['a', 'b'].map((name) => {
      const locks = createPool(suite.db.url, { max: 16, applicationName: `partitions-test-${name}` });
      const logged: { level: number; msg: string }[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, done) {
          for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
            logged.push(JSON.parse(line) as { level: number; msg: string });
          done();
        },
      });
      const log = pino({ level: 'info' }, sink);
      return {
        name,
        locks,
        log,
        logged,
        stop: new AbortController(),
        share: undefined as PartitionShare | undefined,
      };
    });
    const runs: Promise<void>[] = [];
    const otherStore = eventStoreOver(suite.db, { idlePollMs: 30 });
    try {
      for (const p of processes) {
        // b joins once a leads every partition, so a must hand two over.
        if (p.name === 'b') await waitFor(() => led(processes[0]!) === 4, 'a leading all 4');
        p.share = await PartitionShare.join(p.locks, p.log, 100);
        for (const projector of partitionsOf(telemetryFamily, 4))
          runs.push(
            runProjector(suite.db.pool, p.name === 'a' ? suite.store : otherStore, projector, {
              batchSize: 50,
              signal: p.stop.signal,
              logger: p.log,
              locks: p.locks,
              standbyRetryMs: 100,
              share: p.share,
            }),
          );
      }
      const [a, b] = processes as [(typeof processes)[0], (typeof processes)[0]];
      await waitFor(
        () => a.share!.members === 2 && b.share!.members === 2 && led(a) === 2 && led(b) === 2,
        'two members leading 2 partitions each',
      );
      // Handing over is stepping down, not losing the lock: an operator reading warnings sees no alarm.
      expect(a.logged.filter((l) => l.msg === 'stepped down; standing by')).to.have.length(2);
      expect(a.logged.filter((l) => l.msg === 'lost the lock; standing by')).to.deep.equal([]);
      expect([...a.share!.leading('telemetry'), ...b.share!.leading('telemetry')].sort()).to.deep.equal([
        0, 1, 2, 3,
      ]);

      // b dies: its sessions end at the server, as for a killed process, and nothing of it tries again.
      const { rows } = await suite.db.pool.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
          WHERE application_name = 'partitions-test-b' AND datname = current_database()`,
      );
      b.stop.abort();
      await b.share!.leave();
      // Its membership and the election sessions of its 2 partitions, at least.
      expect(rows.filter((r) => r.ended).length, "b's sessions ended").to.be.at.least(3);
      const diedAt = Date.now();
      await waitFor(() => a.share!.members === 1 && led(a) === 4, 'a leading all 4');
      const takeoverMs = Date.now() - diedAt;
      expect(takeoverMs, 'takeover within the documented 5 s').to.be.below(5000);

      // The survivor projects what comes next in all 4 partitions, each reading once.
      await readingsAt(1);
      const rawRows = async () => (await suite.db.pool.query<{ n: number }>(COUNT_RAW_READINGS)).rows[0]!.n;
      await waitFor(async () => (await rawRows()) >= 2 * DEVICES.length * 3, 'the new readings projected');
      for (const projector of partitionsOf(telemetryFamily, 4))
        await catchUpProjector(suite.db.pool, suite.store, projector);
      expect(await rawRows()).to.equal(2 * DEVICES.length * 3);
    } finally {
      for (const p of processes) p.stop.abort();
      await Promise.allSettled(runs);
      for (const p of processes) {
        await p.share?.leave();
        await p.locks.end().catch(() => undefined);
      }
      await otherStore.close();
    }
  });
});

function led(process: { share?: PartitionShare }): number {
  return process.share!.leading('telemetry').length;
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
