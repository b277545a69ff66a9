import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { pairingDecider, pairingStreamName, type PairingEvent } from '../../src/domain/pairing/index.js';
import { handleCommand } from '../../src/eventstore/handle-command.js';
import { createLogger } from '../../src/infra/logger.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { pairingProjector } from '../../src/projections/pairing/projector.js';
import { pairingDeadlinesJob } from '../../src/scheduler/pairing-deadlines.js';
import { runScheduler } from '../../src/scheduler/scheduler.js';
import type { ScheduledJob } from '../../src/scheduler/job.js';
import { eventually } from '../ingress/support/broker-fixture.js';
import { eventStoreForSuite } from '../support/event-store.js';

const logger = createLogger('silent');

describe('scheduler', () => {
  const suite = eventStoreForSuite({ idlePollMs: 50 });

  /** A window opened at `openedAt` with deadline `closesAt`, recorded as the API would have. */
  async function windowOn(hubId: string, sessionId: string, openedAt: Date, closesAt: Date): Promise<void> {
    await handleCommand(suite.store, pairingStreamName(hubId), pairingDecider, {
      type: 'OpenWindow',
      sessionId,
      hubId,
      projectId: 'prj_test',
      at: openedAt.toISOString(),
      closesAt: closesAt.toISOString(),
    });
  }

  async function closeOf(hubId: string, within: number): Promise<PairingEvent | undefined> {
    const deadline = Date.now() + within;
    for (;;) {
      const events = await suite.store.readStream(pairingStreamName(hubId));
      const closed = events.find((e) => e.type === 'PairingWindowClosed');
      if (closed || Date.now() > deadline)
        return closed && ({ type: closed.type, data: closed.data } as PairingEvent);
      await sleep(50);
    }
  }

  /** A scheduler running only the pairing-deadlines job; the returned function stops it. */
  function deadlineScheduler(): () => Promise<void> {
    const stop = new AbortController();
    const running = runScheduler({
      locks: suite.db.locks,
      jobs: [pairingDeadlinesJob({ store: suite.store, pool: suite.db.pool, logger })],
      logger,
      signal: stop.signal,
    });
    return async () => {
      stop.abort();
      await running;
    };
  }

  it('closes, as soon as it starts, a window whose deadline passed while no scheduler ran', async () => {
    const closesAt = new Date(Date.now() - 60_000);
    await windowOn('dev_hub_down', 'ps_down', new Date(closesAt.getTime() - 120_000), closesAt);
    await catchUpProjector(suite.db.pool, suite.store, pairingProjector());
    const stop = deadlineScheduler();
    try {
      const closed = await closeOf('dev_hub_down', 3000);
      expect(closed?.data).to.deep.include({
        sessionId: 'ps_down',
        reason: 'deadline',
        closedAt: closesAt.toISOString(),
      });
    } finally {
      await stop();
    }
  });

  it('closes an open window on time, by its own timer rather than the next sweep', async () => {
    // 2.5 s ahead: the scheduler's start (its lock, the open windows) comes well before the deadline.
    const closesAt = new Date(Date.now() + 2500);
    await windowOn('dev_hub_timer', 'ps_timer', new Date(), closesAt);
    await catchUpProjector(suite.db.pool, suite.store, pairingProjector());
    const stop = deadlineScheduler();
    try {
      const closed = await closeOf('dev_hub_timer', 6000);
      expect(closed?.data).to.deep.include({ sessionId: 'ps_timer', reason: 'deadline' });
      const recorded = (await suite.store.readStream(pairingStreamName('dev_hub_timer')))
        .at(-1)!
        .recordedAt.getTime();
      expect(recorded - closesAt.getTime()).to.be.within(0, 1500);
    } finally {
      await stop();
    }
  });

  it('runs jobs in one instance only; a standby takes over when the active one stops', async () => {
    const runs: string[] = [];
    const job = (instance: string): ScheduledJob => ({
      name: 'probe',
      schedule: '* * * * * *',
      atStart: true,
      run: async () => {
        runs.push(instance);
      },
    });
    const stopA = new AbortController();
    const stopB = new AbortController();
    // One scheduler instance, as one process runs it: its own job, stopped by its own signal.
    const instance = (name: string, stop: AbortController) =>
      runScheduler({
        locks: suite.db.locks,
        jobs: [job(name)],
        logger,
        signal: stop.signal,
        standbyRetryMs: 200,
      });
    const a = instance('a', stopA);
    // b starts once a leads (it has run its job): which one leads is then not left to a start-up's timing.
    await eventually(() => runs.includes('a'), 'instance a running its job', 10_000);
    const b = instance('b', stopB);
    await sleep(2200);
    expect(runs.filter((r) => r === 'b')).to.deep.equal([]);
    expect(runs.filter((r) => r === 'a').length).to.be.at.least(2);
    stopA.abort();
    await a;
    await eventually(() => runs.includes('b'), 'the standby b running the job', 10_000);
    stopB.abort();
    await b;
    expect(runs.filter((r) => r === 'b').length).to.be.at.least(1);
  });
});
