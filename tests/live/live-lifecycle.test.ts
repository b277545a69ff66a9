import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { connect } from 'node:net';
import sinon from 'sinon';
import { REVOKED_CLIENTS_TTL_MS } from '../../src/api/auth/revoked-clients.js';
import { LiveDirectory } from '../../src/api/live/directory.js';
import { LiveStream } from '../../src/api/live/stream.js';
import { framesOf } from '../../src/api/live/frames.js';
import { FrameIds } from '../../src/api/live/frame-id.js';
import { cursorKeys } from '../../src/api/pagination/cursor-keys.js';
import { deviceStreamName } from '../../src/domain/devices/index.js';
import { revokeClient } from '../../src/identity/clients.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { expectDocumented, openLive, type OpenLive } from '../support/live.js';
import { recordReadings } from '../support/readings.js';
import { deviceOf, siteOf } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { devcloud } from '../support/devcloud.js';

const SCOPES = ['telemetry:live'];

/** When the access token expires, in seconds since the epoch, as the server will read it. */
function expiryOf(token: string): number {
  const { exp } = decodeJwt(token);
  if (exp === undefined) throw new Error('the token has no expiry');
  return exp;
}

async function setUp(env: Record<string, string> = {}, options: { now?: () => number } = {}) {
  const api = await startTestApi(env, options);
  const tenant = await createTenant(api, SCOPES);
  const device = await deviceOf(api, tenant.projectId, await siteOf(api, tenant.projectId));
  return { api, tenant, device };
}

describe('GET /v1/live: heartbeat, stream_error, command_update, server timeouts', function () {
  this.timeout(90_000);
  const open: OpenLive[] = [];
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });

  describe('on one service', () => {
    let api: TestApi;
    let tenant: Tenant;
    let device: string;
    before(async () => {
      ({ api, tenant, device } = await setUp({
        LIVE_CLIENT_BUFFER_BYTES: '16384',
        // Short, so the stalled client below is cut soon; long enough that a reading client in this process,
        // starved of CPU for a moment on a busy machine, is not.
        LIVE_CLIENT_STALL_MS: '5000',
        // Smaller than a burst: a stream that falls behind in one is caught up from the store, then the window.
        LIVE_WINDOW_FRAMES: '2000',
        HTTP_HEADERS_TIMEOUT_MS: '500',
        HTTP_REQUEST_TIMEOUT_MS: '1000',
      }));
    });
    after(() => api.close());

    it('sends `: ping` at the heartbeat, clamped to 15..120 seconds', async () => {
      const token = await tenant.token();
      const clock = sinon.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
      try {
        const streams = new Map<string, OpenLive>();
        for (const heartbeat of ['1', '40', '500', undefined]) {
          // Filtered to a device that does not exist, so no frame from the suite's other tests interleaves.
          const quiet = 'types=pairing_update&deviceIds=dev_nothing_here';
          const s = await openLive(api.baseUrl, {
            token,
            query: heartbeat ? `heartbeat=${heartbeat}&${quiet}` : quiet,
          });
          open.push(s);
          streams.set(heartbeat ?? 'default', s);
        }
        const pings = () =>
          Object.fromEntries(
            [...streams].map(([k, s]) => [k, s.items.filter((i) => i.kind === 'comment').length]),
          );
        const settle = () => new Promise((resolve) => setTimeout(resolve, 100));
        clock.tick(14_999);
        await settle();
        expect(pings()).to.deep.equal({ 1: 0, 40: 0, 500: 0, default: 0 });
        clock.tick(1);
        await settle();
        expect(pings()).to.deep.equal({ 1: 1, 40: 0, 500: 0, default: 0 });
        clock.tick(15_000); // 30 s
        await settle();
        expect(pings()).to.deep.equal({ 1: 2, 40: 0, 500: 0, default: 1 });
        clock.tick(10_000); // 40 s
        await settle();
        expect(pings()).to.deep.equal({ 1: 2, 40: 1, 500: 0, default: 1 });
        clock.tick(80_000); // 120 s
        await settle();
        expect(pings()).to.deep.equal({ 1: 8, 40: 3, 500: 1, default: 4 });
        expect(streams.get('500')!.raw()).to.equal('retry: 5000\n\n: ping\n\n');
        expect(streams.get('500')!.items).to.deep.equal([
          { kind: 'retry', ms: 5000 },
          { kind: 'comment', text: 'ping' },
        ]);
      } finally {
        clock.restore();
      }
    });

    it('answers a heartbeat that is not a number with 400', async () => {
      const s = await openLive(api.baseUrl, { token: await tenant.token(), query: 'heartbeat=soon' });
      expect(s.status).to.equal(400);
      expect(s.body).to.deep.include({ error: 'invalid_query', parameter: 'heartbeat' });
    });

    it('cuts a client that stops reading with stream_error too_slow; it resumes by id without a gap', async function () {
      this.timeout(180_000);
      const token = await tenant.token();
      const path = '/v1/live?types=telemetry';
      const { port } = new URL(api.baseUrl);
      const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
        http
          .get({ host: '127.0.0.1', port, path, headers: { Authorization: `Bearer ${token}` } }, resolve)
          .on('error', reject),
      );
      expect(response.statusCode).to.equal(200);
      response.pause();
      await until('stream registered', async () => api.live.streamCount === 1);
      let sent = 0;
      // Far more than the socket buffers hold: the server's own buffer passes its bound and it cuts.
      for (let batch = 0; batch < 200 && api.live.streamCount > 0; batch++) {
        await recordReadings(
          api.store,
          ...Array.from({ length: 20 }, () => ({
            deviceId: device,
            projectId: tenant.projectId,
            receivedAt: new Date().toISOString(),
            readings: Array.from({ length: 50 }, (_, i) => ({
              capability: 'environment.temperature',
              value: sent + i,
            })),
          })),
        );
        sent += 1000;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await until('the server to cut the stream', async () => api.live.streamCount === 0);
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.resume();
      await new Promise((resolve) => response.once('end', resolve));
      expect(text.endsWith('event: stream_error\ndata: {"reason":"too_slow"}\n\n')).to.equal(true);
      const ids = [...text.matchAll(/^id: ([\w-]+)$/gm)].map((m) => m[1]!);
      expect(ids.length).to.be.greaterThan(0).and.lessThan(sent);
      const resumed = await openLive(api.baseUrl, {
        token,
        query: 'types=telemetry',
        headers: { 'Last-Event-ID': ids.at(-1)! },
      });
      open.push(resumed);
      const rest = sent - ids.length;
      // On a loaded machine the hub reaches the cut late and `rest` runs to tens of thousands of frames:
      // the bound is for a stalled resume, not a slow one.
      await resumed.waitFor(`the rest (${rest} frames)`, () => resumed.frames().length >= rest, 75_000);
      const resumedIds = resumed.frames().map((f) => f.id!);
      expect(resumedIds.length).to.equal(rest);
      expect(resumed.frames('telemetry').length, 'no replay_gap, no stream_error').to.equal(rest);
      // Ids are opaque: exactly the rest means none of the frames before the cut again, none twice.
      const before = new Set(ids);
      expect(resumedIds.filter((id) => before.has(id))).to.deep.equal([]);
      expect(new Set(resumedIds).size).to.equal(rest);
    });

    it('keeps a client that reads when the hub hands it a burst past its buffer bound: it is caught up from the store and gets every frame', async function () {
      const token = await tenant.token();
      const stream = await openLive(api.baseUrl, { token, query: 'types=telemetry' });
      open.push(stream);
      await until('stream registered', async () => api.live.streamCount === 1);
      // Watch, change nothing: `offer` returns true when a frame takes the stream past its bound.
      const offers = sinon.spy(LiveStream.prototype, 'offer');
      const reads = sinon.spy(api.store, 'readAll');
      try {
        // One append, so the hub reads it as one batch and offers all its frames in one synchronous turn:
        // far more than the bound and the loopback socket's buffers, while the client is reading.
        const frames = 200 * 50;
        await recordReadings(
          api.store,
          ...Array.from({ length: 200 }, (_, m) => ({
            deviceId: device,
            projectId: tenant.projectId,
            receivedAt: new Date().toISOString(),
            readings: Array.from({ length: 50 }, (_, i) => ({
              capability: 'environment.temperature',
              value: m * 50 + i,
            })),
          })),
        );
        await stream.waitFor(`${frames} frames`, () => stream.frames().length >= frames, 60_000);
        expect(offers.returnValues, 'the burst took the stream past its bound').to.include(true);
        const taken = offers.returnValues.indexOf(true) + 1;
        expect(taken, 'the hub offered only part of the burst live').to.be.lessThan(frames - 2000);
        // Only a catch-up starts inside an event (the frame it stopped at); subscriptions read after a position.
        expect(
          reads.args.some(([options]) => options.from !== undefined),
          'the rest, older than the window, was read from the store',
        ).to.equal(true);
        const received = stream.frames();
        expect(received.map((f) => f.type)).to.deep.equal(Array(frames).fill('telemetry'));
        expect(received.map((f) => f.data.value)).to.deep.equal(Array.from({ length: frames }, (_, i) => i));
        expect(new Set(received.map((f) => f.id)).size, 'each frame once').to.equal(frames);
        expect(api.live.streamCount, 'still open').to.equal(1);
      } finally {
        offers.restore();
        reads.restore();
      }
    });

    it('closes a request whose headers never finish (slowloris), yet keeps a live stream open past the request timeout', async () => {
      const token = await tenant.token();
      const stream = await openLive(api.baseUrl, { token });
      open.push(stream);
      const { port } = new URL(api.baseUrl);
      const socket = connect(Number(port), '127.0.0.1');
      let answer = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
      socket.write('GET /v1/live HTTP/1.1\r\nHost: x\r\nX-Slow: 1');
      const started = Date.now();
      const closed = await new Promise<number>((resolve) =>
        socket.once('close', () => resolve(Date.now() - started)),
      );
      expect(closed).to.be.lessThan(5000);
      expect(answer).to.match(/^HTTP\/1\.1 408/);
      // The open stream outlived both timeouts and still delivers.
      await new Promise((resolve) => setTimeout(resolve, 2500 - (Date.now() - started)));
      await recordReadings(api.store, {
        deviceId: device,
        projectId: tenant.projectId,
        receivedAt: new Date().toISOString(),
        readings: [{ capability: 'environment.temperature', value: 1 }],
      });
      await stream.waitFor('a frame after the timeouts', () => stream.frames('telemetry').length);
    });

    it('sends command_update for each status change of a command, with its capability, and nothing for the rest', async () => {
      const stream = await openLive(api.baseUrl, {
        token: await tenant.token(),
        query: 'types=command_update',
      });
      const relayOnly = await openLive(api.baseUrl, {
        token: await tenant.token(),
        query: 'types=command_update&capabilities=actuator.relay',
      });
      open.push(stream, relayOnly);
      const { projectId } = tenant;
      const by = { kind: 'client', id: tenant.clientId };
      const ref = (commandId: string) => ({ commandId, deviceId: device, projectId });
      const [c1, c2] = [`cmd_${randomUUID()}`, `cmd_${randomUUID()}`];
      const accepted = (commandId: string, capability: string) => ({
        type: 'CommandAccepted',
        data: {
          ...ref(commandId),
          capability,
          value: true,
          mode: 'desired',
          ttlSeconds: 60,
          acceptedAt: '2026-05-01T10:00:00.000Z',
          expiresAt: '2026-05-01T10:01:00.000Z',
          by,
          idempotencyKey: 'k',
          requestHash: 'h',
        },
      });
      const events = [
        {
          type: 'CommandChallengeIssued',
          data: {
            challengeId: 'ch',
            deviceId: device,
            projectId,
            clientId: tenant.clientId,
            capability: 'actuator.contactor',
            value: true,
            issuedAt: '2026-05-01T09:59:00.000Z',
            expiresAt: '2026-05-01T10:04:00.000Z',
          },
        },
        accepted(c1, 'binary.switch'),
        {
          type: 'CommandSent',
          data: { ...ref(c1), agentId: 'agt_x', attempt: 1, sentAt: '2026-05-01T10:00:01.000Z' },
        },
        { type: 'CommandSucceeded', data: { ...ref(c1), at: '2026-05-01T10:00:02.000Z' } },
        {
          type: 'CommandAckIgnored',
          data: { ...ref(c1), at: '2026-05-01T10:00:03.000Z', ackStatus: 'applied', outcome: 'succeeded' },
        },
        accepted(c2, 'actuator.relay'),
        {
          type: 'CommandFailed',
          data: { ...ref(c2), at: '2026-05-01T10:00:04.000Z', reason: 'device_refused' },
        },
      ];
      await api.store.append(
        deviceStreamName(device),
        events.map((e) => ({ id: randomUUID(), ...e })),
        'any',
      );
      await stream.waitFor('four updates', () => stream.frames().length >= 4);
      expect(stream.frames().map((f) => f.data)).to.deep.equal(
        [
          {
            commandId: c1,
            deviceId: device,
            capability: 'binary.switch',
            status: 'queued',
            time: '2026-05-01T10:00:00.000Z',
          },
          {
            commandId: c1,
            deviceId: device,
            capability: 'binary.switch',
            status: 'sent',
            time: '2026-05-01T10:00:01.000Z',
            attempt: 1,
          },
          {
            commandId: c1,
            deviceId: device,
            capability: 'binary.switch',
            status: 'succeeded',
            time: '2026-05-01T10:00:02.000Z',
          },
          {
            commandId: c2,
            deviceId: device,
            capability: 'actuator.relay',
            status: 'queued',
            time: '2026-05-01T10:00:00.000Z',
          },
          {
            commandId: c2,
            deviceId: device,
            capability: 'actuator.relay',
            status: 'failed',
            time: '2026-05-01T10:00:04.000Z',
            reason: 'device_refused',
          },
        ].slice(0, stream.frames().length),
      );
      await stream.waitFor('five updates', () => stream.frames().length >= 5);
      await relayOnly.waitFor('two relay updates', () => relayOnly.frames().length >= 2);
      expectDocumented(stream.frames());
      expect(relayOnly.frames().map((f) => f.data.status)).to.deep.equal(['queued', 'failed']);
      // A process that never saw the acceptance reads the capability from the device's stream, once.
      const succeeded = (await api.store.readStream(deviceStreamName(device))).find(
        (e) => e.type === 'CommandSucceeded',
      )!;
      const directory = new LiveDirectory(api.store);
      await directory.prepare([succeeded]);
      const [frame] = framesOf(succeeded, directory, await FrameIds.load(cursorKeys(api.db.pool)));
      expect(frame!.text).to.equal(
        `id: ${stream.frames()[2]!.id}\nevent: command_update\ndata: ${JSON.stringify(stream.frames()[2]!.data)}\n\n`,
      );
    });
  });

  it('ends every stream with stream_error shutdown when the service stops', async () => {
    const { api, tenant } = await setUp();
    try {
      const streams = [
        await openLive(api.baseUrl, { token: await tenant.token() }),
        await openLive(api.baseUrl, { token: await tenant.token(), query: 'types=telemetry' }),
      ];
      open.push(...streams);
      await until('registered', async () => api.live.streamCount === 2);
      await api.live.close();
      for (const s of streams) {
        await s.ended;
        expect(s.frames().at(-1)).to.deep.equal({
          id: undefined,
          type: 'stream_error',
          data: { reason: 'shutdown' },
        });
      }
    } finally {
      await api.close();
    }
  });

  it('ends a stream with stream_error token_expired when its token expires: a stream never outlives its token', async () => {
    let offsetMs = 0;
    const { api, tenant } = await setUp({}, { now: () => Date.now() + offsetMs });
    try {
      const token = await tenant.token();
      const expiresAtMs = expiryOf(token) * 1000;
      // The server's clock jumps to 5 s before the token's expiry: room to open the stream on a loaded machine.
      offsetMs = expiresAtMs - Date.now() - 5000;
      const stream = await openLive(api.baseUrl, { token });
      open.push(stream);
      expect(stream.status).to.equal(200);
      await stream.ended;
      // On the server's clock: not before the expiry, and soon after it (however long the opening took).
      const endedAtMs = Date.now() + offsetMs;
      expect(stream.frames().at(-1)).to.deep.equal({
        id: undefined,
        type: 'stream_error',
        data: { reason: 'token_expired' },
      });
      expect(endedAtMs - expiresAtMs).to.be.within(0, 5000);
      // The same token no longer opens one.
      offsetMs = expiresAtMs - Date.now() + 10_000;
      expect((await openLive(api.baseUrl, { token })).status).to.equal(401);
    } finally {
      await api.close();
    }
  });
});

describe('live stream of a revoked client', () => {
  it('ends with stream_error token_revoked within the revocation bound, and the token opens no new one', async function () {
    this.timeout(60_000);
    const { api, tenant } = await setUp();
    try {
      const token = await tenant.token();
      const stream = await openLive(api.baseUrl, { token });
      expect(stream.status).to.equal(200);
      await until('registered', async () => api.live.streamCount === 1);
      const { position } = await revokeClient(api.store, tenant.clientId);
      await api.catchUp(position);
      const revokedAt = Date.now();
      await stream.ended;
      expect(stream.frames().at(-1)).to.deep.equal({
        id: undefined,
        type: 'stream_error',
        data: { reason: 'token_revoked' },
      });
      // The revoked-client cache (5 s) plus one sweep (5 s), with room for a slow machine.
      expect(Date.now() - revokedAt).to.be.below(20_000);
      expect((await openLive(api.baseUrl, { token })).status).to.equal(401);
    } finally {
      await api.close();
    }
  });
});

describe('live stream of a revoked signing key', () => {
  const kidOf = (token: string) => decodeProtectedHeader(token).kid!;
  const reading = (deviceId: string, projectId: string, value: number) => ({
    deviceId,
    projectId,
    receivedAt: new Date().toISOString(),
    readings: [{ capability: 'environment.temperature', value }],
  });

  it('ends every stream its tokens opened with stream_error token_revoked within the key cache refresh plus one sweep; a stream of another key goes on', async function () {
    this.timeout(120_000);
    // A short key cache (the default is 10 s), so the rotation and the revoke below are seen in about a second.
    const { api, tenant, device } = await setUp({ SIGNING_KEY_REFRESH_MS: '1000' });
    const open: OpenLive[] = [];
    try {
      const leaked = await tenant.token();
      const rotation = await devcloud(api, 'keys', 'rotate', '--json');
      expect(rotation.code, rotation.stderr).to.equal(0);
      // The API signs with the new key once its key cache (SIGNING_KEY_REFRESH_MS) has seen the rotation.
      let other = await tenant.token();
      for (const deadline = Date.now() + 20_000; kidOf(other) === kidOf(leaked);) {
        if (Date.now() > deadline) throw new Error('the API never signed with the rotated key');
        await new Promise((resolve) => setTimeout(resolve, 250));
        other = await tenant.token();
      }
      const doomed = await openLive(api.baseUrl, { token: leaked, query: 'types=telemetry' });
      const kept = await openLive(api.baseUrl, { token: other, query: 'types=telemetry' });
      open.push(doomed, kept);
      expect([doomed.status, kept.status]).to.deep.equal([200, 200]);
      await until('both registered', async () => api.live.streamCount === 2);
      await recordReadings(api.store, reading(device, tenant.projectId, 1));
      for (const s of [doomed, kept])
        await s.waitFor('the first reading', () => s.frames('telemetry').length);

      // The CLI's own path: `devcloud keys revoke KID`.
      const revoke = await devcloud(api, 'keys', 'revoke', '--json', '--', kidOf(leaked));
      expect(JSON.parse(revoke.stdout)).to.deep.equal({ kid: kidOf(leaked), revoked: true });
      const revokedAt = Date.now();
      // Readings keep coming while the key's streams wind down: only the other key's stream goes on.
      let value = 2;
      while (!(await Promise.race([doomed.ended.then(() => true), sleepFalse(500)]))) {
        await recordReadings(api.store, reading(device, tenant.projectId, value++));
        if (Date.now() - revokedAt > 30_000) throw new Error('the stream of the revoked key never ended');
      }
      expect(doomed.frames().at(-1)).to.deep.equal({
        id: undefined,
        type: 'stream_error',
        data: { reason: 'token_revoked' },
      });
      // The key cache's refresh plus one sweep (REVOKED_CLIENTS_TTL_MS); measured from the CLI's return, so
      // within that bound plus slack for a loaded machine.
      expect(Date.now() - revokedAt).to.be.below(
        api.config.SIGNING_KEY_REFRESH_MS + REVOKED_CLIENTS_TTL_MS + 2000,
      );

      await recordReadings(api.store, reading(device, tenant.projectId, 1000));
      await kept.waitFor('the reading after the revoke', () =>
        kept.frames('telemetry').some((f) => f.data.value === 1000),
      );
      expect(kept.frames('stream_error')).to.deep.equal([]);
      expect(api.live.streamCount).to.equal(1);
      expect((await openLive(api.baseUrl, { token: leaked })).status).to.equal(401);
    } finally {
      for (const s of open) s.close();
      await api.close();
    }
  });
});

function sleepFalse(ms: number): Promise<false> {
  return new Promise((resolve) => setTimeout(() => resolve(false), ms));
}

async function until(what: string, probe: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
