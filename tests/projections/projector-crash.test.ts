import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { expect } from 'chai';
import { readCheckpoint } from '../../src/projections/checkpoints.js';
import { devicesProjector } from '../../src/projections/devices/projector.js';
import { stateProjector } from '../../src/projections/state/projector.js';
import { telemetryProjector } from '../../src/projections/telemetry/projector.js';
import { COUNT_RAW_READINGS } from '../../src/projections/telemetry/sql.js';
import { compareWithReplay } from '../../tools/soak/replay-check.js';
import { projectorsCaughtUp, waitFor } from '../../tools/soak/settle.js';
import { storeAndDirectoryForSuite } from '../support/event-store.js';
import { startEventWriter, type EventWriter } from '../support/event-writer.js';

const FIXTURE = 'tests/fixtures/read-model-projector-process.ts';
const TARGETS = ['state', 'telemetry', 'devices'] as const;

/**
 * SIGKILLs the process running the real state, telemetry and devices projectors while one of their batches
 * is applied but not committed (seen as that batch's open write transaction in pg_stat_activity), while
 * events keep arriving; afterwards each read model equals a clean replay of the same events into a fresh
 * schema (state and telemetry refuse rebuilds, so the replay never replaces them).
 */
describe('projector crash test: SIGKILL the real projectors inside a batch', function () {
  this.timeout(600_000);
  let child: ChildProcess | undefined;
  let writer: EventWriter | undefined;
  const suite = storeAndDirectoryForSuite(
    'projector-crash',
    async () => {
      await writer?.stop();
      child?.kill('SIGKILL');
    },
    { idlePollMs: 50 },
  );

  function startProjectors(holdProjector?: string): ChildProcess {
    return spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
      env: {
        ...process.env,
        DATABASE_URL: suite.db.url,
        HOLD_PROJECTOR: holdProjector ?? '',
        HOLD_MS: '20000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
  }

  function nextApply(process: ChildProcess, ms: number): Promise<{ projector: string; pid: number }> {
    return new Promise((resolve, reject) => {
      const lines = createInterface({ input: process.stdout! });
      const timer = setTimeout(() => reject(new Error('no batch announced in time')), ms);
      lines.on('line', (line) => {
        const [word, projector, pid] = line.split(' ');
        if (word !== 'APPLY') return;
        clearTimeout(timer);
        lines.close();
        resolve({ projector: projector!, pid: Number(pid) });
      });
    });
  }

  it('leaves state, telemetry and devices equal to a clean replay after kills mid-batch', async () => {
    const { db, store, dataDir } = suite;
    writer = await startEventWriter(store, { dataDir });

    const landed: { projector: string; state: string; xid: boolean; checkpointKept: boolean }[] = [];
    for (const target of TARGETS) {
      child = startProjectors(target);
      const { projector, pid } = await nextApply(child, 120_000);
      const before = (await readCheckpoint(db.pool, projector))?.position;
      const { rows } = await db.pool.query<{ state: string; xid: string | null }>(
        `SELECT state, backend_xid::text AS xid FROM pg_stat_activity WHERE pid = $1`,
        [pid],
      );
      child.kill('SIGKILL');
      await once(child, 'exit');
      child = undefined;
      // The server rolls the batch back once it sees the client gone; the checkpoint must not have moved.
      expect(
        await waitFor(async () => {
          const gone = await db.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
          return gone.rowCount === 0;
        }, 30_000),
        'the killed batch backend went away',
      ).to.equal(true);
      const afterKill = (await readCheckpoint(db.pool, projector))?.position;
      landed.push({
        projector,
        state: rows[0]?.state ?? 'gone',
        xid: rows[0]?.xid !== null && rows[0]?.xid !== undefined,
        checkpointKept: afterKill === before,
      });
    }

    // The fault really happened: every kill landed inside a write transaction of the targeted projector
    // (it had written rows, so it had a transaction id) that was rolled back, leaving its checkpoint.
    expect(landed.map((l) => l.projector)).to.deep.equal([...TARGETS]);
    for (const l of landed) {
      expect(l, JSON.stringify(l)).to.include({ xid: true, checkpointKept: true });
      expect(l.state).to.be.oneOf(['active', 'idle in transaction']);
    }

    // The kills take a second or two each: let enough arrive for the replay comparison to mean something.
    const w = writer;
    expect(
      await waitFor(async () => w.readings() > 2000 && w.devices.length > 4, 60_000),
      'readings and adoptions written',
    ).to.equal(true);
    await writer.stop();
    child = startProjectors();
    const projectors = [stateProjector(), telemetryProjector(), devicesProjector()];
    expect(await projectorsCaughtUp(db.pool, store, projectors, 180_000), 'projectors caught up').to.equal(
      true,
    );
    child.kill('SIGKILL');
    await once(child, 'exit');
    child = undefined;

    const comparisons = await compareWithReplay(db.pool, store, projectors);
    expect(comparisons.map((c) => c.table)).to.include.members(['device_state', 'telemetry_raw', 'devices']);
    for (const c of comparisons) {
      expect(c.equal, `${c.table} equals a clean replay: ${JSON.stringify(c)}`).to.equal(true);
    }
    const raw = await db.pool.query<{ n: number }>(COUNT_RAW_READINGS);
    expect(raw.rows[0]!.n, 'readings projected').to.be.greaterThan(1000);
    expect(
      comparisons.find((c) => c.table === 'devices')!.liveRows,
      'devices adopted meanwhile',
    ).to.be.greaterThan(3);
  });
});
