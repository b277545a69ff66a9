import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { expect } from 'chai';
import { LiveClient, type LiveClientOptions, type LiveFrame } from '../../examples/live-client/client.js';
import { DAY_MS } from '../../src/domain/time.js';
import { deleteExpiredReadings } from '../../src/ingress/readings/retention.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { startPrefixProxy, type PrefixProxy } from '../support/prefix-proxy.js';
import { recordReadings } from '../support/readings.js';
import { deviceOf, siteOf } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';
import { devcloud } from '../support/devcloud.js';

/** The reference client of examples/live-client, run against the real server. */
describe('examples/live-client against the real server', function () {
  this.timeout(90_000);
  let api: TestApi;
  let prefixed: PrefixProxy;
  let tenant: Tenant;
  let basicTenant: Tenant;
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

  /** A client of `who` (the tenant unless told) following the test device's telemetry, unless `options` differ. */
  const clientOf = (options: Partial<LiveClientOptions> = {}, who: Tenant = tenant) =>
    new LiveClient({
      baseUrl: api.baseUrl,
      clientId: who.clientId,
      clientSecret: who.clientSecret,
      types: ['telemetry'],
      deviceIds: [device],
      onFrame: () => undefined,
      ...options,
    });

  before(async () => {
    // A short signing-key cache (the default is 10 s): the revoked key below is refused within about a second.
    api = await startTestApi({ SIGNING_KEY_REFRESH_MS: '1000' }, { now: () => Date.now() + offsetMs });
    tenant = await createTenant(api, ['telemetry:live', 'telemetry:read', 'devices:read']);
    device = await deviceOf(api, tenant.projectId, await siteOf(api, tenant.projectId));
    basicTenant = await createTenant(api, ['telemetry:live'], { auth: 'basic' });
    // The service published under https://host/devcloud: a real HTTP hop that strips the prefix.
    prefixed = await startPrefixProxy('/devcloud');
    prefixed.target = api.baseUrl;
  });
  after(async () => {
    stop.abort();
    await prefixed?.close();
    await api?.close();
  });

  it('follows the stream, renews its token when the stream ends for expiry, and resumes without a gap', async () => {
    const frames: LiveFrame[] = [];
    const notices: string[] = [];
    const client = clientOf({
      clientAuth: 'post',
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
    const first = clientOf({ onFrame: (f) => void frames.push(f) });
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
    const resumed = clientOf({
      baseUrl: `${prefixed.baseUrl}/`,
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
    // Through the prefix: the token, the stream and the backfill's telemetry request all kept it.
    expect(prefixed.paths.some((p) => p.startsWith(`/devcloud/v1/devices/${device}/telemetry?`))).to.equal(
      true,
    );
    // Reading 11 left the store but not this process's memory: it is still sent, after the gap notice.
    expect(later.map((f) => f.data.value)).to.deep.equal([11, 12]);
  });
  it('remembers a frame only once its handler returned: a frame whose handler threw comes again', async () => {
    offsetMs = 0;
    const handled: number[] = [];
    const notices: string[] = [];
    const client = clientOf({
      onFrame: (f) => {
        handled.push(f.data.value as number);
        if (handled.length === 2) throw new Error('handler failed');
      },
      onNotice: (n) => void notices.push(n),
    });
    const stopped = new AbortController();
    const running = client.run(stopped.signal);
    await until('connected', () => client.connections === 1);
    await reading(49);
    await until('a frame handled', () => handled.length === 1);
    await reading(50);
    await until('the frame handed over again after the reconnect', () => handled.length === 3);
    stopped.abort();
    await running;
    // The fault happened: the handler threw and the connection was given up.
    expect(notices).to.include('connection lost: handler failed');
    expect(client.connections).to.equal(2);
    expect(handled).to.deep.equal([49, 50, 50]);
    expect(client.lastEventId).to.be.a('string');
  });

  it('waits and tries again when the token endpoint is busy (503 with Retry-After)', async () => {
    offsetMs = 0;
    const realFetch = globalThis.fetch;
    let tokenAnswers = 0;
    globalThis.fetch = async (input, init) => {
      if (String(input).endsWith('/v1/oauth/token') && tokenAnswers++ === 0) {
        // As the token endpoint answers when its costly checks are all taken (docs/api.md).
        return Response.json(
          { error: 'temporarily_unavailable' },
          { status: 503, headers: { 'Retry-After': '1' } },
        );
      }
      return realFetch(input, init);
    };
    const notices: string[] = [];
    const client = clientOf({ onNotice: (n) => void notices.push(n) });
    const stopped = new AbortController();
    try {
      const running = client.run(stopped.signal);
      await until('connected after the wait', () => client.connections === 1);
      stopped.abort();
      await running;
    } finally {
      globalThis.fetch = realFetch;
    }
    expect(notices[0]).to.equal('token request 503');
    expect(tokenAnswers).to.equal(2);
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
      const client = clientOf({ onFrame: (f) => void frames.push(f) });
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
      const doomed = clientOf();
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

  it('gets its token with HTTP Basic by default, so a client created with --auth basic works', async () => {
    const frames: LiveFrame[] = [];
    const client = clientOf({ onFrame: (f) => void frames.push(f) }, basicTenant);
    const stopped = new AbortController();
    const running = client.run(stopped.signal);
    await until('connected', () => client.connections === 1);
    stopped.abort();
    await running;

    // The method is the caller's choice: form credentials are refused for this client, as the spec says.
    const inForm = clientOf({ clientAuth: 'post' }, basicTenant);
    const failure = await inForm.run(new AbortController().signal).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).to.equal('live stream: token request 401 invalid_client');
  });

  it('keeps the path of its base URL: behind a proxy at /devcloud every request goes under /devcloud', async () => {
    offsetMs = 0;
    const frames: LiveFrame[] = [];
    const client = clientOf({
      baseUrl: prefixed.baseUrl,
      onFrame: (f) => void frames.push(f),
    });
    const stopped = new AbortController();
    const from = prefixed.paths.length;
    const running = client.run(stopped.signal);
    await until('connected through the proxy', () => client.connections === 1);
    await reading(30);
    await until('a frame through the proxy', () => frames.length === 1);
    stopped.abort();
    await running;
    expect(frames[0]!.data.value).to.equal(30);
    const paths = prefixed.paths.slice(from);
    expect(paths[0]).to.equal('/devcloud/v1/oauth/token');
    expect(paths[1]).to.match(/^\/devcloud\/v1\/live\?/);

    // Without the prefix the proxy has no such page: the client says so and stops, rather than retrying.
    const lost = clientOf({ baseUrl: new URL(prefixed.baseUrl).origin });
    const failure = await lost.run(new AbortController().signal).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).to.equal('live stream: token request 404');
  });

  it('main.ts, run as its README says, prints frames as JSON lines, stops on SIGINT and names the last id', async () => {
    offsetMs = 0;
    const run = (env: Record<string, string>) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'examples/live-client/main.ts'], {
        env: { PATH: process.env.PATH, DEVCLOUD_URL: prefixed.baseUrl, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const output = { stdout: '', stderr: '' };
      child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
      return { child, output, exited: once(child, 'exit') as Promise<[number | null]> };
    };
    const from = prefixed.answers.length;
    const main = run({
      DEVCLOUD_CLIENT_ID: tenant.clientId,
      DEVCLOUD_CLIENT_SECRET: tenant.clientSecret,
      LIVE_TYPES: 'telemetry',
      LIVE_DEVICE_IDS: device,
    });
    try {
      // The stream starts where the server stood when it answered: the reading must come after the 200.
      await until(
        'the stream answered',
        () =>
          prefixed.answers
            .slice(from)
            .some((a) => a.path.startsWith('/devcloud/v1/live?') && a.status === 200),
        30_000,
      );
      await reading(40);
      await until('a frame printed', () => main.output.stdout.includes('\n'));
      main.child.kill('SIGINT');
      const [code] = await main.exited;
      expect(code, main.output.stderr).to.equal(0);
    } finally {
      main.child.kill('SIGKILL');
    }
    const frame = JSON.parse(main.output.stdout.split('\n')[0]!) as LiveFrame;
    expect(frame).to.deep.include({ type: 'telemetry' });
    expect(frame.data).to.include({ deviceId: device, value: 40 });
    expect(main.output.stderr).to.equal(`last event id: ${frame.id}\n`);

    const refused = run({
      DEVCLOUD_CLIENT_ID: basicTenant.clientId,
      DEVCLOUD_CLIENT_SECRET: basicTenant.clientSecret,
      DEVCLOUD_CLIENT_AUTH: 'post',
    });
    const [code] = await refused.exited;
    expect(code).to.equal(1);
    expect(refused.output.stderr).to.equal('live stream: token request 401 invalid_client\n');
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
