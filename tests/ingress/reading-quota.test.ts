import { expect } from 'chai';
import sinon from 'sinon';
import { createLogger } from '../../src/infra/logger.js';
import { ReadingQuota } from '../../src/ingress/readings/reading-quota.js';

describe('readings quota (fake clock)', () => {
  let clock: sinon.SinonFakeTimers;
  let warn: sinon.SinonStub;
  let overQuota: number;
  let quota: ReadingQuota;

  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    const logger = createLogger('silent');
    warn = sinon.stub(logger, 'warn');
    overQuota = 0;
    quota = new ReadingQuota({
      readingsPerSecond: 100,
      burst: 50,
      logger,
      onOverQuota: () => (overQuota += 1),
      logWindowMs: 60_000,
    });
  });
  afterEach(() => {
    clock.restore();
    sinon.restore();
  });

  /** Settles `promise` as far as the fake clock at `ms` allows: 'waiting' if it has not. */
  async function stateAt(promise: Promise<void>, ms: number): Promise<string> {
    let state = 'waiting';
    promise.then(
      () => (state = 'admitted'),
      (error: Error) => (state = error.name),
    );
    await clock.tickAsync(ms - Date.now());
    return state;
  }

  it('admits within the burst at once, then holds messages back until the bucket has refilled', async () => {
    for (let i = 0; i < 5; i++) await quota.admit('agt_a', 10); // the burst: resolves without a timer
    expect(overQuota).to.equal(0);
    const held = quota.admit('agt_a', 10); // 10 readings at 100/s: 100 ms
    const behind = quota.admit('agt_a', 20); // queued behind it: 300 ms
    expect(await stateAt(held, 99)).to.equal('waiting');
    expect(await stateAt(held, 100)).to.equal('admitted');
    expect(await stateAt(behind, 299)).to.equal('waiting');
    expect(await stateAt(behind, 300)).to.equal('admitted');
    expect(overQuota).to.equal(2);
  });

  it('keeps agents apart', async () => {
    const held = quota.admit('agt_a', 60);
    expect(await stateAt(quota.admit('agt_b', 50), 0)).to.equal('admitted');
    expect(await stateAt(held, 99)).to.equal('waiting');
    expect(await stateAt(held, 100)).to.equal('admitted');
  });

  it('stops waiting when the connection ends, and gives the readings back for the redelivery', async () => {
    await quota.admit('agt_a', 50);
    const connection = new AbortController();
    const held = quota.admit('agt_a', 30, connection.signal);
    expect(await stateAt(held, 100)).to.equal('waiting');
    connection.abort();
    expect(await stateAt(held, 100)).to.equal('AbortError');
    // Had the 30 stayed spent, 10 more would wait 300 ms; given back, they wait for the 10 alone.
    expect(await stateAt(quota.admit('agt_a', 10), 200)).to.equal('admitted');
  });

  it('logs once per agent per window, saying how many messages the line stands for', async () => {
    await quota.admit('agt_a', 50);
    const waits = [quota.admit('agt_a', 1), quota.admit('agt_a', 1), quota.admit('agt_b', 60)];
    expect(warn.callCount).to.equal(2);
    expect(warn.firstCall.args[0]).to.deep.include({ agentId: 'agt_a', heldBackSinceLastLog: 0 });
    expect(warn.secondCall.args[0]).to.deep.include({ agentId: 'agt_b' });
    await clock.tickAsync(60_000);
    await Promise.all(waits);
    const again = quota.admit('agt_a', 51); // the bucket is full again: one over
    expect(warn.callCount).to.equal(3);
    expect(warn.thirdCall.args[0]).to.deep.include({ agentId: 'agt_a', heldBackSinceLastLog: 1 });
    await clock.tickAsync(10);
    await again;
    expect(overQuota).to.equal(4);
  });
});
