import { randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { expect } from 'chai';
import { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import { auditProjector } from '../../src/projections/audit/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { installProjector, readCheckpoint } from '../../src/projections/checkpoints.js';
import { RebuildRefused } from '../../src/projections/projector.js';
import { rebuildProjector } from '../../src/projections/rebuild.js';
import { runProjector } from '../../src/projections/runner.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { tallyProjector } from '../fixtures/tally-projector.js';

const TYPES = ['Ticked', 'Tocked'];
const logger = createLogger('silent');

async function appendMany(store: PostgresEventStore, streams: number, perStream: number, type = 'Ticked') {
  for (let s = 0; s < streams; s++) {
    const events = Array.from({ length: perStream }, (_, i) => ({
      id: randomUUID(),
      type: i % 5 === 0 ? 'Ignored' : type,
      data: { i },
    }));
    await store.append(`clock-${s}`, events, 'any');
  }
}

async function tallies(db: TestDatabase, schema = 'public'): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<{ stream_name: string; events: string }>(
    `SELECT stream_name, events FROM ${schema}.tally ORDER BY stream_name`,
  );
  return Object.fromEntries(rows.map((r) => [r.stream_name, Number(r.events)]));
}

async function truth(db: TestDatabase): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<{ stream_name: string; n: string }>(
    `SELECT stream_name, count(*) AS n FROM eventstore.events WHERE event_type = ANY ($1) GROUP BY 1 ORDER BY 1`,
    [TYPES],
  );
  return Object.fromEntries(rows.map((r) => [r.stream_name, Number(r.n)]));
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('projection runner', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  beforeEach(async () => {
    db = await freshDatabase();
    store = new PostgresEventStore(db.pool, { connectionString: db.url, idlePollMs: 30 });
  });
  afterEach(async () => {
    await store.close();
    await db.drop();
  });

  it('projects only its event types, in batches, and moves the checkpoint with them', async () => {
    await appendMany(store, 3, 10);
    await catchUpProjector(db.pool, store, tallyProjector(TYPES), 4);
    expect(await tallies(db)).to.deep.equal(await truth(db));
    const checkpoint = await readCheckpoint(db.pool, 'tally');
    expect(checkpoint!.position).to.equal(await store.headPosition());
    expect(checkpoint!.eventsApplied).to.equal(24n);
  });

  it('resumes after a stop without loss or double effect', async () => {
    await appendMany(store, 4, 50);
    let applied = 0;
    const first = new AbortController();
    const run1 = runProjector(
      db.pool,
      store,
      tallyProjector(TYPES, (n) => (applied += n), 5),
      { batchSize: 7, locks: db.locks, signal: first.signal, logger },
    );
    await waitFor(async () => applied > 30);
    first.abort();
    await run1;
    await appendMany(store, 2, 20);
    const second = new AbortController();
    const run2 = runProjector(db.pool, store, tallyProjector(TYPES), {
      batchSize: 7,
      locks: db.locks,
      signal: second.signal,
      logger,
    });
    const expected = await truth(db);
    await waitFor(async () => JSON.stringify(await tallies(db)) === JSON.stringify(expected));
    second.abort();
    await run2;
    expect(await tallies(db)).to.deep.equal(expected);
  });

  it('keeps one active instance per projector; the others stand by, and the result is exact', async () => {
    await appendMany(store, 5, 40);
    await installProjector(db.pool, tallyProjector(TYPES)); // so the table exists before the first poll
    const controller = new AbortController();
    const appliedBy = [0, 0, 0];
    const runs = appliedBy.map((_, i) =>
      runProjector(
        db.pool,
        store,
        tallyProjector(TYPES, (n) => (appliedBy[i]! += n), 2),
        {
          batchSize: 5,
          locks: db.locks,
          signal: controller.signal,
          logger,
          standbyRetryMs: 50,
        },
      ),
    );
    const expected = await truth(db);
    await waitFor(async () => JSON.stringify(await tallies(db)) === JSON.stringify(expected));
    controller.abort();
    await Promise.all(runs);
    expect(
      appliedBy.filter((n) => n > 0),
      'only one instance applied batches',
    ).to.have.length(1);
    expect(await tallies(db)).to.deep.equal(expected);
  });

  it('refuses to rebuild a read model that outlives its events, and stands by on a version change instead', async () => {
    await appendMany(store, 2, 10);
    const keeper = { ...tallyProjector(TYPES), keepsHistoryBeyondRetention: true };
    await catchUpProjector(db.pool, store, keeper);
    const before = await tallies(db);
    let refusal: unknown;
    await rebuildProjector(db.pool, store, keeper, { batchSize: 100 }).catch((e: unknown) => (refusal = e));
    expect(refusal).to.be.instanceOf(RebuildRefused);
    expect(await tallies(db)).to.deep.equal(before);

    await appendMany(store, 1, 10);
    const controller = new AbortController();
    const run = runProjector(
      db.pool,
      store,
      { ...keeper, version: 2 },
      { batchSize: 50, locks: db.locks, signal: controller.signal, logger, standbyRetryMs: 50 },
    );
    await new Promise((r) => setTimeout(r, 300));
    controller.abort();
    await run;
    expect(await tallies(db), 'nothing projected with the new version').to.deep.equal(before);
    expect((await readCheckpoint(db.pool, 'tally'))!.version).to.equal(1);
  });

  it('SIGKILLed in the middle of batches and restarted, leaves the read models exactly as a clean replay', async function () {
    this.timeout(120_000);
    await appendMany(store, 20, 150);
    const env = { ...process.env, DATABASE_URL: db.url, EVENT_TYPES: TYPES.join(',') };
    let kills = 0;
    // Each kill lands at a random moment of a batch: inside apply, at commit, or around the checkpoint.
    for (; kills < 10; kills++) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'tests/fixtures/projector-process.ts'], {
        env,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await waitForLine(child, 'APPLY', 30_000);
      await new Promise((r) => setTimeout(r, Math.random() * 60));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
    const finalRun = spawn(process.execPath, ['--import', 'tsx', 'tests/fixtures/projector-process.ts'], {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    try {
      const head = await store.headPosition();
      await waitFor(async () => {
        const [t, a] = await Promise.all([
          readCheckpoint(db.pool, 'tally'),
          readCheckpoint(db.pool, 'audit'),
        ]);
        return t?.position === head && a?.position === head;
      }, 90_000);
    } finally {
      finalRun.kill('SIGKILL');
    }
    expect(kills).to.equal(10);
    const crashed = {
      tally: await tallies(db),
      audit: (await db.pool.query('SELECT * FROM audit_log ORDER BY position')).rows,
    };

    // The clean replay: the same projectors from the start, after moving the crashed tables aside.
    await db.pool.query('CREATE SCHEMA crashed');
    await db.pool.query('ALTER TABLE public.tally SET SCHEMA crashed');
    await db.pool.query('ALTER TABLE public.audit_log SET SCHEMA crashed');
    await db.pool.query('DELETE FROM projection.checkpoints');
    await catchUpProjector(db.pool, store, tallyProjector(TYPES));
    await catchUpProjector(db.pool, store, auditProjector(TYPES));
    expect(crashed.tally).to.deep.equal(await tallies(db));
    expect(crashed.tally).to.deep.equal(await truth(db));
    expect(crashed.audit).to.deep.equal(
      (await db.pool.query('SELECT * FROM audit_log ORDER BY position')).rows,
    );
  });
});

function waitForLine(child: ChildProcess, line: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`no ${line} from child`)), timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      if (buffer.includes(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error('child exited early'));
    });
  });
}
