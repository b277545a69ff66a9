import { expect } from 'chai';
import sinon from 'sinon';
import { signCheckpoints } from '../../src/audit/checkpoints.js';
import { activeAuditSigner, type AuditSigner } from '../../src/audit/signing-keys.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { checkpointStream, type AuditCheckpoint } from '../../src/domain/audit/checkpoint-events.js';
import { createLogger } from '../../src/infra/logger.js';
import { auditChainProjector } from '../../src/projections/audit-chain/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { auditCheckpointJob, cronEvery } from '../../src/scheduler/audit-checkpoints.js';
import { runScheduler } from '../../src/scheduler/scheduler.js';
import {
  appendProjectHistory,
  clientRevoked,
  expectContinuousCheckpoints,
  raceOnAuditStreams,
  signTwiceAtOnce,
} from '../support/audit-chain.js';
import { until } from '../support/edge-agent.js';
import { eventStoreForEachTest } from '../support/event-store.js';

const logger = createLogger('silent');
const T0 = new Date('2026-03-01T10:00:00.000Z');

describe('audit checkpoints', () => {
  const suite = eventStoreForEachTest({ idlePollMs: 50 });
  let signer: AuditSigner;

  beforeEach(async () => {
    await appendProjectHistory(suite.store, 'prj_aaaaaaaa');
    await appendProjectHistory(suite.store, 'prj_bbbbbbbb');
    await chain();
    signer = await activeAuditSigner(suite.db.pool);
  });

  const chain = () => catchUpProjector(suite.db.pool, suite.store, auditChainProjector());
  const sign = (now = T0) => signCheckpoints({ store: suite.store, pool: suite.db.pool, signer, now });
  const checkpoints = async (projectId: string) =>
    (await suite.store.readStream(checkpointStream(projectId))).map((e) => e.data as AuditCheckpoint);
  const head = async (projectId: string) =>
    (
      await suite.db.pool.query<{ sequence: string; link: string; position: string }>(
        'SELECT sequence, link, position FROM audit_chain_heads WHERE project_id = $1',
        [projectId],
      )
    ).rows[0]!;
  /** One more chained event of the project, chained. */
  const move = async (projectId: string) => {
    await suite.store.append(`client-${projectId}`, [clientRevoked(projectId)], 'any');
    await chain();
  };

  const expectContinuous = (projectId: string, counts: number[]) =>
    expectContinuousCheckpoints(suite.store, suite.db.pool, projectId, counts);

  it('signs each moved head once, nothing when nothing moved, and continues the sequence across runs', async () => {
    const first = await sign();
    expect(first.map((s) => [s.projectId, s.sequence, s.count])).to.deep.equal([
      ['prj_aaaaaaaa', 0, 8],
      ['prj_bbbbbbbb', 0, 8],
    ]);
    const [a0] = await expectContinuous('prj_aaaaaaaa', [8]);
    const headA = await head('prj_aaaaaaaa');
    expect([a0!.head, a0!.position, a0!.signedAt]).to.deep.equal([
      headA.link,
      headA.position,
      T0.toISOString(),
    ]);

    expect(await sign(new Date(T0.getTime() + 60_000))).to.deep.equal([]);
    await expectContinuous('prj_aaaaaaaa', [8]);

    await move('prj_aaaaaaaa');
    await move('prj_aaaaaaaa');
    const third = await sign(new Date(T0.getTime() + 120_000));
    expect(third.map((s) => [s.projectId, s.sequence, s.count])).to.deep.equal([['prj_aaaaaaaa', 1, 10]]);
    const list = await expectContinuous('prj_aaaaaaaa', [8, 10]);
    expect(list[1]!.head).to.equal((await head('prj_aaaaaaaa')).link);
    await expectContinuous('prj_bbbbbbbb', [8]);
  });

  it('takes the marks as a hint only: without them, or with stale ones, the streams decide', async () => {
    await sign();
    await suite.db.pool.query('DELETE FROM audit.checkpoint_marks');
    expect(await sign(), 'nothing moved: no checkpoint, marks gone or not').to.deep.equal([]);
    const { rows: marks } = await suite.db.pool.query(
      'SELECT project_id, sequence, count FROM audit.checkpoint_marks ORDER BY 1',
    );
    expect(
      marks.map((m: { project_id: string; sequence: string; count: string }) => [
        m.project_id,
        Number(m.sequence),
        Number(m.count),
      ]),
    ).to.deep.equal([
      ['prj_aaaaaaaa', 0, 8],
      ['prj_bbbbbbbb', 0, 8],
    ]);

    await move('prj_aaaaaaaa');
    await suite.db.pool.query('DELETE FROM audit.checkpoint_marks');
    expect((await sign()).map((s) => [s.projectId, s.sequence])).to.deep.equal([['prj_aaaaaaaa', 1]]);
    await move('prj_aaaaaaaa');
    // A mark behind the stream (a crash between the append and the mark): the newest checkpoint still wins.
    await suite.db.pool.query(
      `UPDATE audit.checkpoint_marks SET sequence = 0, count = 8 WHERE project_id = 'prj_aaaaaaaa'`,
    );
    expect((await sign()).map((s) => [s.projectId, s.sequence])).to.deep.equal([['prj_aaaaaaaa', 2]]);
    await expectContinuous('prj_aaaaaaaa', [8, 9, 10]);
    await expectContinuous('prj_bbbbbbbb', [8]);
  });

  it('two schedulers signing at once record one checkpoint per sequence', async () => {
    const { outcomes: appendOutcomes, reset } = raceOnAuditStreams(suite.store);
    const race = () => {
      reset();
      return signTwiceAtOnce(suite.store, suite.db.pool, signer, T0);
    };
    // First checkpoints (no stream yet), then the next ones (at a revision).
    expect(await race()).to.deep.equal(['prj_aaaaaaaa#0', 'prj_bbbbbbbb#0']);
    expect(appendOutcomes.sort()).to.deep.equal(['appended', 'appended', 'wrong revision', 'wrong revision']);
    await move('prj_aaaaaaaa');
    await move('prj_bbbbbbbb');
    expect(await race()).to.deep.equal(['prj_aaaaaaaa#1', 'prj_bbbbbbbb#1']);
    expect(appendOutcomes.sort()).to.deep.equal(['appended', 'appended', 'wrong revision', 'wrong revision']);
    sinon.restore();
    await expectContinuous('prj_aaaaaaaa', [8, 9]);
    await expectContinuous('prj_bbbbbbbb', [8, 9]);
  });

  it('runs at AUDIT_CHECKPOINT_INTERVAL_SECONDS through the real scheduler, and once at its start', async function () {
    this.timeout(60_000);
    const clock = sinon.useFakeTimers({
      now: new Date('2026-03-01T10:00:30.000Z'),
      toFake: ['Date', 'setTimeout', 'clearTimeout'],
      shouldAdvanceTime: true,
      // The pools' timers made before the clock was faked are cleared through it.
      shouldClearNativeTimers: true,
    });
    const config = loadConfig({ AUDIT_CHECKPOINT_INTERVAL_SECONDS: '60' });
    const job = auditCheckpointJob({ store: suite.store, pool: suite.db.pool, config, logger });
    expect(job.schedule).to.equal('0 */1 * * * *');
    const runs: { at: string; done: Promise<void> }[] = [];
    const observed = {
      ...job,
      run(leadership: AbortSignal) {
        const done = job.run(leadership);
        runs.push({ at: new Date().toISOString(), done });
        return done;
      },
    };
    const stop = new AbortController();
    const scheduler = runScheduler({ locks: suite.db.locks, jobs: [observed], logger, signal: stop.signal });
    try {
      await until('the run at the scheduler start', async () => (runs.length === 1 ? true : undefined));
      await runs[0]!.done;
      expect((await checkpoints('prj_aaaaaaaa')).map((c) => c.count)).to.deep.equal([8]);

      await move('prj_aaaaaaaa');
      await clock.tickAsync(Date.parse('2026-03-01T10:00:59.000Z') - Date.now());
      expect(runs, 'no run before the minute').to.have.length(1);
      await clock.tickAsync(Date.parse('2026-03-01T10:01:00.500Z') - Date.now());
      await until('the run on the minute', async () => (runs.length === 2 ? true : undefined));
      await runs[1]!.done;
      expect(runs[1]!.at.slice(0, 19)).to.equal('2026-03-01T10:01:00');
      const list = await checkpoints('prj_aaaaaaaa');
      expect(list.map((c) => c.count)).to.deep.equal([8, 9]);
      expect(Date.parse(list[1]!.signedAt)).to.be.within(
        Date.parse('2026-03-01T10:01:00.000Z'),
        Date.parse('2026-03-01T10:01:10.000Z'),
      );

      await clock.tickAsync(Date.parse('2026-03-01T10:02:00.500Z') - Date.now());
      await until('the next minute', async () => (runs.length === 3 ? true : undefined));
      await runs[2]!.done;
      expect(
        (await checkpoints('prj_aaaaaaaa')).map((c) => c.count),
        'nothing moved: no checkpoint',
      ).to.deep.equal([8, 9]);
    } finally {
      stop.abort();
      clock.restore();
      await scheduler;
    }
  });

  it('signs nothing, and fails nothing, before the chain projector has made its tables', async () => {
    await suite.db.pool.query('DROP TABLE audit_chain_heads');
    const { rows } = await suite.db.pool.query(`SELECT to_regclass('audit_chain_heads') AS t`);
    expect(rows[0]).to.deep.equal({ t: null });
    expect(await sign()).to.deep.equal([]);
  });

  it('config takes intervals that divide a minute or an hour, and refuses others naming the variable', () => {
    expect(loadConfig({}).AUDIT_CHECKPOINT_INTERVAL_SECONDS).to.equal(60);
    for (const ok of ['5', '30', '120', '900', '3600']) {
      expect(
        loadConfig({ AUDIT_CHECKPOINT_INTERVAL_SECONDS: ok }).AUDIT_CHECKPOINT_INTERVAL_SECONDS,
      ).to.equal(Number(ok));
    }
    expect([5, 30, 60, 900, 3600].map(cronEvery)).to.deep.equal([
      '*/5 * * * * *',
      '*/30 * * * * *',
      '0 */1 * * * *',
      '0 */15 * * * *',
      '0 */60 * * * *',
    ]);
    for (const bad of ['7', '90', '0', '4', '7200', 'soon']) {
      expect(() => loadConfig({ AUDIT_CHECKPOINT_INTERVAL_SECONDS: bad }), bad).to.throw(
        ConfigError,
        /AUDIT_CHECKPOINT_INTERVAL_SECONDS/,
      );
    }
    expect(() => loadConfig({ AUDIT_SIGNING_KEY_ENCRYPTION_KEY: 'c2hvcnQ=' })).to.throw(
      ConfigError,
      /AUDIT_SIGNING_KEY_ENCRYPTION_KEY: 32 bytes/,
    );
  });
});
