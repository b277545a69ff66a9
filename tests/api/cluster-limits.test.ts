import { expect } from 'chai';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import sinon from 'sinon';
import { SharedRequestBuckets } from '../../src/api/cluster-limits/request-buckets.js';
import { SharedStreamSlots } from '../../src/api/cluster-limits/stream-slots.js';
import { startTestApi } from '../support/api-harness.js';
import { openLive } from '../support/live.js';
import { REDIS_URL, dropNamespace, requireRedis, testNamespace } from '../support/redis.js';
import { createTenant } from '../support/tenants.js';

const logger = pino({ level: 'silent' });

/** Polls `probe` until it answers something, at most `ms`. */
async function eventually<T>(what: string, probe: () => Promise<T | undefined>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await probe();
    if (answer !== undefined) return answer;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('limits the API processes share through Redis (real Redis)', function () {
  this.timeout(60_000);
  let namespace: string;
  const connections: Redis[] = [];
  /** A connection as one API process has it: keys under the namespace. */
  const process = () => {
    const redis = new Redis(REDIS_URL, { keyPrefix: `${namespace}:` });
    connections.push(redis);
    return redis;
  };

  before(async function () {
    await requireRedis(this);
  });
  beforeEach(() => {
    namespace = testNamespace('limits');
  });
  afterEach(async () => {
    sinon.restore();
    for (const redis of connections.splice(0)) redis.disconnect();
    await dropNamespace(namespace);
  });

  it('one request bucket per address across processes: what one spent, the other refuses', async () => {
    const options = { ratePerSecond: 1, burst: 4, logger };
    const [a, b] = [
      new SharedRequestBuckets(process(), options),
      new SharedRequestBuckets(process(), options),
    ];
    const waits = [];
    for (const node of [a, b, a, b, a]) waits.push(await node.take('203.0.113.7'));
    // Each process alone would still have had tokens: [0, 0, 0, 0, 0].
    expect(waits.slice(0, 4)).to.deep.equal([0, 0, 0, 0]);
    expect(waits[4]).to.be.at.least(1);
    expect(await b.take('203.0.113.8'), 'another address has its own bucket').to.equal(0);
  });

  it('limits per process, and says so, when Redis does not answer', async () => {
    const redis = process();
    const buckets = new SharedRequestBuckets(redis, { ratePerSecond: 1, burst: 2, logger });
    sinon.stub(redis, 'eval').rejects(new Error('Connection is closed.'));
    const warn = sinon.spy(logger, 'warn');
    const waits = [];
    for (let i = 0; i < 3; i++) waits.push(await buckets.take('203.0.113.9'));
    expect(waits.slice(0, 2)).to.deep.equal([0, 0]);
    expect(waits[2]).to.be.at.least(1);
    expect(warn.callCount, 'one warning, not one per request').to.equal(1);
    expect(String(warn.firstCall.args[1])).to.match(/per process/);
  });

  it('stream slots: the limit holds across processes, a closed stream frees its slot, a dead process frees its slots when their leases end', async () => {
    const leaseMs = 1500;
    const a = new SharedStreamSlots(process(), 2, { leaseMs, logger });
    const b = new SharedStreamSlots(process(), 2, { leaseMs, logger });
    try {
      const first = await a.take('client-1');
      expect(first).to.not.equal(undefined);
      expect(await b.take('client-1')).to.not.equal(undefined);
      expect(await a.take('client-1')).to.equal(undefined);
      expect(await b.take('client-1')).to.equal(undefined);
      expect(await b.take('client-2'), 'another client has its own slots').to.not.equal(undefined);

      first!.release();
      const third = await eventually('a slot given back', () => a.take('client-1'));
      // Renewed leases outlive their first term: over three terms the limit keeps holding.
      const until = Date.now() + 3 * leaseMs;
      while (Date.now() < until) {
        expect(await a.take('client-1'), 'still at the limit').to.equal(undefined);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      third!.release();

      // b "dies": it stops renewing and never gives its slot back; the lease frees it.
      b.close();
      expect(await a.take('client-1'), 'the slot given back').to.not.equal(undefined);
      await eventually("the dead process's slot", () => a.take('client-1'), 3 * leaseMs);
      expect(await a.take('client-1')).to.equal(undefined);
    } finally {
      a.close();
      b.close();
    }
  });

  it('stream slots are counted per process, with a warning, when Redis does not answer', async () => {
    const redis = process();
    const slots = new SharedStreamSlots(redis, 1, { leaseMs: 30_000, logger });
    try {
      sinon.stub(redis, 'eval').rejects(new Error('Connection is closed.'));
      const warn = sinon.spy(logger, 'warn');
      const slot = await slots.take('client-3');
      expect(slot, 'this process still has room').to.not.equal(undefined);
      expect(await slots.take('client-3'), 'and counts what it holds').to.equal(undefined);
      slot!.release();
      expect(await slots.take('client-3')).to.not.equal(undefined);
      expect(warn.called).to.equal(true);
    } finally {
      slots.close();
    }
  });

  it('the API refuses a stream (429 too_many_streams) and a request (429) for what another process holds', async () => {
    const api = await startTestApi({
      CLUSTER_REDIS_URL: REDIS_URL,
      CLUSTER_NAMESPACE: namespace,
      LIVE_MAX_STREAMS_PER_CLIENT: '1',
      RATE_LIMIT_PER_SECOND: '1',
      RATE_LIMIT_BURST: '50',
    });
    const other = new SharedStreamSlots(process(), 1, { leaseMs: 30_000, logger });
    try {
      const tenant = await createTenant(api, ['telemetry:live']);
      const token = await tenant.token();
      const held = await other.take(tenant.clientId);
      const refused = await openLive(api.baseUrl, { token });
      refused.close();
      expect(refused.status).to.equal(429);
      expect(refused.body).to.deep.include({ reason: 'too_many_streams', limit: 1 });

      held!.release();
      const opened = await eventually('a stream once the other process let go', async () => {
        const stream = await openLive(api.baseUrl, { token });
        if (stream.status === 200) return stream;
        stream.close();
        return undefined;
      });
      opened.close();

      // The same address's requests, counted by another process, to the last token.
      const buckets = new SharedRequestBuckets(process(), { ratePerSecond: 1, burst: 50, logger });
      while ((await buckets.take('127.0.0.1')) === 0);
      const answer = await fetch(`${api.baseUrl}/health`, { signal: AbortSignal.timeout(10_000) });
      expect(answer.status).to.equal(429);
    } finally {
      other.close();
      await api.close();
    }
  });
});
