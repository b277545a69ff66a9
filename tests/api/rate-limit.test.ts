import { expect } from 'chai';
import { clientKey } from '../../src/api/rate-limit.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';

const SPEC_LIMITS = { RATE_LIMIT_PER_SECOND: '30', RATE_LIMIT_BURST: '60' };

async function hit(api: TestApi, headers: Record<string, string> = {}, path = '/v1/anything') {
  const response = await fetch(`${api.baseUrl}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    text: await response.text(),
  };
}

let forwarded = 0;
const spoofed = () => ({ 'X-Forwarded-For': `198.51.100.${forwarded++ % 250}, 10.0.${forwarded % 250}.1` });

describe('rate limit: 30 requests/s per client address, burst 60', () => {
  describe('with TRUST_PROXY_HOPS=0 (the socket address is the client)', () => {
    let clock = Date.now();
    let api: TestApi;
    before(async () => {
      api = await startTestApi({ ...SPEC_LIMITS, TRUST_PROXY_HOPS: '0' }, { now: () => clock });
    });
    after(async () => {
      await api.close();
    });

    it('lets 60 immediate requests through and answers the 61st 429 rate_limited with Retry-After, whatever X-Forwarded-For says', async () => {
      for (let i = 0; i < 60; i++) {
        const answer = await hit(api, spoofed());
        expect(answer.status, `request ${i + 1}`).to.equal(401); // passed the limiter, stopped by authentication
      }
      const limited = await hit(api, spoofed());
      expect(limited.status).to.equal(429);
      expect(limited.text).to.equal('{"error":"rate_limited"}');
      expect(limited.retryAfter).to.equal('1');
      for (let i = 0; i < 5; i++) expect((await hit(api, spoofed())).status).to.equal(429);
    });

    it('covers /health too, and refills at 30 per second', async () => {
      expect((await hit(api, {}, '/health')).status).to.equal(429);
      clock += 1000;
      for (let i = 0; i < 30; i++)
        expect((await hit(api, {}, '/health')).status, `request ${i + 1}`).to.equal(200);
      expect((await hit(api, {}, '/health')).status).to.equal(429);
      clock += 2000;
      for (let i = 0; i < 60; i++) expect((await hit(api)).status).to.equal(401);
      expect((await hit(api)).status).to.equal(429);
    });
  });

  describe('with TRUST_PROXY_HOPS=1 (one proxy of ours in front)', () => {
    const clock = Date.now();
    let api: TestApi;
    before(async () => {
      api = await startTestApi({ ...SPEC_LIMITS, TRUST_PROXY_HOPS: '1' }, { now: () => clock });
    });
    after(async () => {
      await api.close();
    });

    it('limits by the address our proxy appended; entries the client wrote before it do not help', async () => {
      const viaProxy = (spoof: string) => ({ 'X-Forwarded-For': `${spoof}, 203.0.113.7` });
      for (let i = 0; i < 60; i++) expect((await hit(api, viaProxy(`192.0.2.${i}`))).status).to.equal(401);
      expect((await hit(api, viaProxy('192.0.2.200'))).status).to.equal(429);
      // Another client behind the same proxy has its own bucket.
      expect((await hit(api, { 'X-Forwarded-For': '203.0.113.8' })).status).to.equal(401);
    });
  });
});

describe('client addresses', () => {
  it('unwraps IPv4-mapped IPv6 and groups IPv6 by /64', () => {
    expect(clientKey('::ffff:192.0.2.1')).to.equal('192.0.2.1');
    expect(clientKey('192.0.2.1')).to.equal('192.0.2.1');
    expect(clientKey('2001:db8:1:2:aaaa::1')).to.equal('2001:db8:1:2::/64');
    expect(clientKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).to.equal('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::1')).to.equal('2001:db8:0:0::/64');
    expect(clientKey('fe80::1%eth0')).to.equal('fe80:0:0:0::/64');
    expect(clientKey('::1')).to.equal('0:0:0:0::/64');
    expect(clientKey(undefined)).to.equal('unknown');
  });
});
