import { expect } from 'chai';
import { LiveClient, type LiveFrame } from '../../examples/live-client/client.js';
import { DAY_MS } from '../../src/domain/time.js';
import { deleteExpiredReadings } from '../../src/ingress/readings/retention.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { recordReadings } from '../support/readings.js';
import { deviceOf, siteOf } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';
import { devcloud } from '../support/devcloud.js';

/** The reference client of examples/live-client, run against the real server. */
describe('examples/live-client against the real server', function () {
  this.timeout(90_000);
  let api: TestApi;
  let tenant: Tenant;
  let device: string;
  let offsetMs = 0;
  const stop = new AbortController();
  const reading = (value: number, receivedAt = new Date()) =>
    recordReadings(api.store, {
      deviceId: device,
      projectId: tenant.projectId,
      receivedAt: receivedAt.toISOString(),
      readings: [{ capability: 'environment.temperature', value, deviceTime: receivedAt.toISOString() }],
    });
  const until = async (what: string, probe: () => boolean, ms = 20_000) => {
    const deadline = Date.now() + ms;
    while (!probe()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };

  before(async () => {
    api = await startTestApi({}, { now: () => Date.now() + offsetMs });
    tenant = await createTenant(api, ['telemetry:live', 'telemetry:read', 'devices:read']);
    device = await deviceOf(api, tenant.projectId, await siteOf(api, tenant.projectId));
  });
  after(async () => {
    stop.abort();
    await api.close();
  });

  it('follows the stream, renews its token when the stream ends for expiry, and resumes without a gap', async () => {
    const frames: LiveFrame[] = [];
    const notices: string[] = [];
    const client = new LiveClient({
      baseUrl: api.baseUrl,
      clientId: tenant.clientId,
      clientSecret: tenant.clientSecret,
      types: ['telemetry'],
      onFrame: (f) => void frames.push(f),
      onNotice: (n) => void notices.push(n),
    });
    // Between the client's token request and its stream request the server's clock jumps to 5 s before the
    // token's expiry (room to connect and get a frame on a loaded machine), so the stream it opens ends with
    // token_expired shortly after.
    const realFetch = globalThis.fetch;
    globalThis.fetch = async (input, init) => {
      const response = await realFetch(input, init);
      if (String(input).endsWith('/v1/oauth/token') && offsetMs === 0) offsetMs = 3600_000 - 5000;
      return response;
    };
    let running: Promise<void>;
    try {
      running = client.run(stop.signal);
      await until('connected', () => client.connections === 1);
    } finally {
      globalThis.fetch = realFetch;
    }
    await reading(1);
    await until('first frame', () => frames.length === 1);
    await until('stream_error token_expired', () => notices.includes('stream_error token_expired'), 15_000);
    offsetMs = 3600_000 + 60_000; // the old token is dead now; the client must get a new one
    await reading(2);
    await reading(3);
    await until('reconnected after retry with a new token', () => frames.length === 3, 20_000);
    expect(client.connections).to.equal(2);
    expect(frames.map((f) => f.data.value)).to.deep.equal([1, 2, 3]);
    expect(client.lastEventId).to.equal(frames[2]!.id);
    stop.abort();
    await running;
  });

  it('backfills from the telemetry endpoint after a replay_gap', async () => {
    offsetMs = 0;
    const frames: LiveFrame[] = [];
    const first = new LiveClient({
      baseUrl: api.baseUrl,
      clientId: tenant.clientId,
      clientSecret: tenant.clientSecret,
      types: ['telemetry'],
      deviceIds: [device],
      onFrame: (f) => void frames.push(f),
    });
    const firstStop = new AbortController();
    const running = first.run(firstStop.signal);
    await until('connected', () => first.connections === 1);
    await reading(10);
    await reading(11);
    await until('two frames', () => frames.length === 2);
    firstStop.abort();
    await running;
    const { deleted } = await deleteExpiredReadings(api.store, {
      retentionDays: 1,
      now: Date.now() + 2 * DAY_MS,
    });
    expect(deleted).to.be.greaterThan(0);
    await api.catchUp();

    const backfills: { deviceId: string; telemetry: unknown }[] = [];
    const later: LiveFrame[] = [];
    const resumed = new LiveClient({
      baseUrl: api.baseUrl,
      clientId: tenant.clientId,
      clientSecret: tenant.clientSecret,
      types: ['telemetry'],
      deviceIds: [device],
      lastEventId: frames[0]!.id,
      onFrame: (f) => void later.push(f),
      onBackfill: (deviceId, telemetry) => void backfills.push({ deviceId, telemetry }),
    });
    const resumedStop = new AbortController();
    const again = resumed.run(resumedStop.signal);
    await until('backfill', () => backfills.length === 1);
    await reading(12);
    await until('live again', () => later.at(-1)?.data.value === 12);
    resumedStop.abort();
    await again;
    expect(backfills[0]!.deviceId).to.equal(device);
    expect(backfills[0]!.telemetry).to.deep.include({ deviceId: device });
    expect(backfills[0]!.telemetry).to.have.property('points').that.is.an('array');
    // Reading 11 left the store but not this process's memory: it is still sent, after the gap notice.
    expect(later.map((f) => f.data.value)).to.deep.equal([11, 12]);
  });
  it('answers a 401 with a fresh token and one more try; a second 401 in a row is final', async () => {
    offsetMs = 0;
    const realFetch = globalThis.fetch;
    let tokenRequests = 0;
    let streamAnswers: number[] = [];
    let spoil = 1; // how many token answers to replace with a token the server cannot verify
    globalThis.fetch = async (input, init) => {
      const response = await realFetch(input, init);
      if (String(input).endsWith('/v1/oauth/token')) {
        tokenRequests += 1;
        if (spoil-- > 0) {
          const body = (await response.json()) as Record<string, unknown>;
          return Response.json({ ...body, access_token: 'eyJhbGciOiJub25lIn0.e30.' });
        }
      } else if (String(input).includes('/v1/live')) streamAnswers.push(response.status);
      return response;
    };
    try {
      const frames: LiveFrame[] = [];
      const client = new LiveClient({
        baseUrl: api.baseUrl,
        clientId: tenant.clientId,
        clientSecret: tenant.clientSecret,
        types: ['telemetry'],
        deviceIds: [device],
        onFrame: (f) => void frames.push(f),
      });
      const renewed = new AbortController();
      const running = client.run(renewed.signal);
      await until('connected with the second token', () => client.connections === 1);
      await reading(20);
      await until('a frame', () => frames.length === 1);
      renewed.abort();
      await running;
      // The fault happened: the real server refused the spoiled token, and the client asked for another.
      expect(streamAnswers).to.deep.equal([401, 200]);
      expect(tokenRequests).to.equal(2);
      expect(frames[0]!.data.value).to.equal(20);

      streamAnswers = [];
      tokenRequests = 0;
      spoil = 2;
      const doomed = new LiveClient({
        baseUrl: api.baseUrl,
        clientId: tenant.clientId,
        clientSecret: tenant.clientSecret,
        types: ['telemetry'],
        onFrame: () => undefined,
      });
      const failure = await doomed.run(new AbortController().signal).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(streamAnswers).to.deep.equal([401, 401]);
      expect(tokenRequests).to.equal(2);
      expect((failure as Error).message).to.match(/401 twice/);
    } finally {
      globalThis.fetch = realFetch;
    }
  });

  it('after its signing key is revoked, ends with token_revoked, gets a token of another key and resumes without a gap', async () => {
    offsetMs = 0;
    const frames: LiveFrame[] = [];
    const notices: string[] = [];
    const client = new LiveClient({
      baseUrl: api.baseUrl,
      clientId: tenant.clientId,
      clientSecret: tenant.clientSecret,
      types: ['telemetry'],
      deviceIds: [device],
      onFrame: (f) => void frames.push(f),
      onNotice: (n) => void notices.push(n),
    });
    const revoked = new AbortController();
    const running = client.run(revoked.signal);
    await until('connected', () => client.connections === 1);
    await reading(30);
    await until('a frame', () => frames.length === 1);
    // As the operator would after a leak: a new key signs, the leaked one is revoked.
    expect((await devcloud(api, 'keys', 'rotate', '--json')).code).to.equal(0);
    const { rows } = await api.db.pool.query<{ kid: string }>(
      'SELECT kid FROM auth.signing_keys WHERE retired_at IS NOT NULL AND revoked_at IS NULL',
    );
    for (const { kid } of rows)
      expect((await devcloud(api, 'keys', 'revoke', '--json', '--', kid)).code).to.equal(0);
    await reading(31);
    await until('stream_error token_revoked', () => notices.includes('stream_error token_revoked'), 30_000);
    await reading(32);
    await until('resumed with a new token', () => frames.length === 3, 20_000);
    expect(client.connections).to.equal(2);
    expect(frames.map((f) => f.data.value)).to.deep.equal([30, 31, 32]);
    revoked.abort();
    await running;
  });
});
