import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { expectDocumented, openLive, type OpenLive } from '../support/live.js';
import { recordReadings } from '../support/readings.js';
import { deviceDecider, deviceStreamName } from '../../src/domain/devices/index.js';
import { handleCommand } from '../../src/eventstore/handle-command.js';
import { adoptCandidate, joinCandidate } from '../../src/pairing/candidates.js';
import { openPairingWindow } from '../../src/pairing/windows.js';
import { deviceOf, siteOf } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';

async function changeStatus(api: TestApi, deviceId: string, status: 'active' | 'quarantined' | 'suspended') {
  await handleCommand(api.store, deviceStreamName(deviceId), deviceDecider, {
    type: 'ChangeDeviceLifecycle',
    deviceId,
    status,
  });
}

const LIVE = ['telemetry:live', 'telemetry:read', 'devices:read'];

describe('GET /v1/live', function () {
  this.timeout(60_000);
  let api: TestApi;
  let tenant: Tenant;
  let token: string;
  let site: string;
  let deviceA: string;
  let deviceB: string;
  const open: OpenLive[] = [];
  const live = async (query?: string, headers?: Record<string, string>, as = token) => {
    const stream = await openLive(api.baseUrl, { token: as, query, headers });
    open.push(stream);
    return stream;
  };
  const reading = (deviceId: string, capability: string, value: number, projectId = tenant.projectId) =>
    recordReadings(api.store, {
      deviceId,
      projectId,
      receivedAt: new Date().toISOString(),
      readings: [{ capability, value, deviceTime: new Date().toISOString() }],
    });

  before(async () => {
    api = await startTestApi({ LIVE_MAX_STREAMS_PER_CLIENT: '4' });
    tenant = await createTenant(api, LIVE);
    token = await tenant.token();
    site = await siteOf(api, tenant.projectId);
    deviceA = await deviceOf(api, tenant.projectId, site);
    deviceB = await deviceOf(api, tenant.projectId, site);
  });
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });
  after(() => api.close());

  it('sends retry: 5000 first, before any frame, as text/event-stream', async () => {
    const stream = await live();
    expect(stream.status).to.equal(200);
    expect(stream.headers.get('content-type')).to.match(/^text\/event-stream/);
    await reading(deviceA, 'environment.temperature', 21.5);
    await stream.waitFor('a frame', () => stream.frames().length > 0);
    expect(stream.items[0]).to.deep.equal({ kind: 'retry', ms: 5000 });
  });

  it('sends telemetry frames with id, event and the documented data', async () => {
    const stream = await live('types=telemetry');
    const deviceTime = '2026-01-01T10:00:00.000Z';
    const receivedAt = new Date().toISOString();
    await recordReadings(api.store, {
      deviceId: deviceA,
      projectId: tenant.projectId,
      receivedAt,
      readings: [{ capability: 'environment.humidity', value: 40, deviceTime }],
    });
    // A reading of the test before may still reach the hub after this stream joined: it is live too.
    const frame = await stream.waitFor('telemetry', () =>
      stream.frames('telemetry').find((f) => f.data.capability === 'environment.humidity'),
    );
    // Opaque: 53 sealed bytes in base64url (frame-id.ts).
    expect(frame!.id).to.match(/^[\w-]{71}$/);
    expect(frame!.data).to.deep.equal({
      deviceId: deviceA,
      capability: 'environment.humidity',
      value: 40,
      unit: '%RH',
      quality: ['clock_skew'],
      deviceTime,
      serverTime: receivedAt,
    });
  });

  it('sends pairing_update with exactly the spec fields, and device_status for the adopted device', async () => {
    const hub = await deviceOf(api, tenant.projectId, site, { kind: 'hub' });
    const byHub = await live(`deviceIds=${hub}&types=pairing_update`);
    const all = await live();
    const now = new Date();
    const { sessionId } = await openPairingWindow(api.store, {
      projectId: tenant.projectId,
      hubId: hub,
      now,
    });
    const ieeeAddr = '0x00158d0000aabbcc';
    const candidate = { hubId: hub, sessionId, ieeeAddr, now };
    await joinCandidate(api.store, {
      ...candidate,
      manufacturer: 'LUMI',
      productModel: 'lumi.weather',
      capabilities: ['environment.temperature'],
    });
    await adoptCandidate(api.store, candidate);
    await byHub.waitFor('three updates', () => byHub.frames().length >= 3);
    await all.waitFor('and the new device', () => all.frames().length >= 4);
    const adopted = byHub.frames()[2]!.data.deviceId as string;
    expect(byHub.frames().map((f) => f.data)).to.deep.equal([
      { sessionId, hubId: hub, ieeeAddr: null, state: 'open', deviceId: null },
      { sessionId, hubId: hub, ieeeAddr, state: 'pending', deviceId: null },
      { sessionId, hubId: hub, ieeeAddr, state: 'adopted', deviceId: adopted },
    ]);
    expect(all.frames().map((f) => f.type)).to.include('device_status');
    const registered = all.frames('device_status').find((f) => f.data.deviceId === adopted)!;
    expect(registered.data).to.deep.include({ change: 'lifecycle', status: 'active', reason: 'registered' });
    expectDocumented(all.frames());
  });

  describe('filters', () => {
    it('types, deviceIds and capabilities each narrow the stream, and combine', async () => {
      const all = await live();
      const onlyStatus = await live('types=device_status');
      const onlyB = await live(`deviceIds=${deviceB}`);
      const onlyHumidity = await live('capabilities=environment.humidity');
      await reading(deviceA, 'environment.temperature', 1);
      await reading(deviceB, 'environment.temperature', 2);
      await reading(deviceB, 'environment.humidity', 3);
      await changeStatus(api, deviceB, 'quarantined');
      await all.waitFor('everything', () => all.frames().length >= 4);
      for (const s of [onlyStatus, onlyB, onlyHumidity])
        await s.waitFor('status', () => s.frames('device_status').length);
      const seen = (s: OpenLive) =>
        s
          .frames()
          .map((f) => `${f.type}:${String(f.data.deviceId)}:${String(f.data.capability ?? f.data.status)}`);
      expect(seen(all)).to.deep.equal([
        `telemetry:${deviceA}:environment.temperature`,
        `telemetry:${deviceB}:environment.temperature`,
        `telemetry:${deviceB}:environment.humidity`,
        `device_status:${deviceB}:quarantined`,
      ]);
      expect(seen(onlyStatus)).to.deep.equal([`device_status:${deviceB}:quarantined`]);
      expect(seen(onlyB)).to.deep.equal(seen(all).slice(1));
      // A capability narrows frames about a capability; a status change is about none and passes.
      expect(seen(onlyHumidity)).to.deep.equal(seen(all).slice(2));
      // The same stream ids everywhere.
      expect(onlyB.frames().map((f) => f.id)).to.deep.equal(
        all
          .frames()
          .slice(1)
          .map((f) => f.id),
      );
      expectDocumented(all.frames());
      await changeStatus(api, deviceB, 'active');
    });

    it('combines all three', async () => {
      const combined = await live(
        `types=telemetry&deviceIds=${deviceA},${deviceB}&capabilities=environment.humidity`,
      );
      const everything = await live();
      await reading(deviceA, 'environment.temperature', 1);
      await reading(deviceA, 'environment.humidity', 2);
      await reading(deviceB, 'environment.humidity', 3);
      await changeStatus(api, deviceA, 'suspended');
      await everything.waitFor('all four', () => everything.frames().length >= 4);
      await combined.waitFor('two', () => combined.frames().length >= 2);
      expect(combined.frames().map((f) => [f.data.deviceId, f.data.value])).to.deep.equal([
        [deviceA, 2],
        [deviceB, 3],
      ]);
      await changeStatus(api, deviceA, 'active');
      // Seen through before the next test opens its streams: a stream opened while the hub has not yet
      // followed this change would start before it and show it.
      await everything.waitFor('the change back', () =>
        everything
          .frames('device_status')
          .some((f) => f.data.deviceId === deviceA && f.data.status === 'active'),
      );
    });

    it('answers 400 listing the valid values for an unknown type or capability', async () => {
      const badType = await live('types=telemetry,weather');
      expect(badType.status).to.equal(400);
      expect(badType.body).to.deep.include({
        error: 'invalid_filter',
        reason: 'unknown_type',
        invalid: ['weather'],
      });
      expect(badType.body!.valid).to.deep.equal([
        'telemetry',
        'device_status',
        'command_update',
        'pairing_update',
      ]);
      const badCapability = await live('capabilities=environment.temprature');
      expect(badCapability.status).to.equal(400);
      expect(badCapability.body).to.deep.include({ error: 'invalid_filter', reason: 'unknown_capability' });
      expect(badCapability.body!.valid).to.include('environment.temperature');
    });
  });

  describe('authentication and tenancy', () => {
    it('never takes a token from the query string, and says so, with or without a header', async () => {
      for (const [query, headers] of [
        [`access_token=${token}`, {}],
        [`access_token=${token}`, { Authorization: `Bearer ${token}` }],
        [`t=${token}`, {}],
      ] as const) {
        const response = await fetch(`${api.baseUrl}/v1/live?${query}`, { headers });
        expect(response.status).to.equal(400);
        expect(await response.json()).to.deep.include({
          error: 'invalid_query',
          reason: 'token_in_query_string',
        });
      }
    });

    it('answers 401 without a bearer header and 403 without telemetry:live', async () => {
      expect((await live(undefined, undefined, '')).status).to.equal(401);
      const reader = await tenant.token(['devices:read']);
      expect((await live(undefined, undefined, reader)).status).to.equal(403);
    });

    it('shows a project only its own frames; a projectId parameter is refused, never widening', async () => {
      const other = await createTenant(api, LIVE);
      const otherToken = await other.token();
      const otherSite = await siteOf(api, other.projectId);
      const foreign = await deviceOf(api, other.projectId, otherSite);
      const mine = await live();
      const theirs = await live(undefined, undefined, otherToken);
      const asking = await live(`deviceIds=${deviceA}`, undefined, otherToken);
      const widening = await live(`projectId=${tenant.projectId}`, undefined, otherToken);
      expect(widening.status).to.equal(400);
      expect(widening.body).to.deep.include({
        error: 'invalid_query',
        reason: 'unknown_parameter',
        parameter: 'projectId',
      });
      await reading(deviceA, 'environment.temperature', 7);
      await reading(foreign, 'environment.temperature', 8, other.projectId);
      // Counted as telemetry frames: a stream may also show a status frame of a change made just before it
      // opened (its registration), if the hub had not followed that change yet.
      await mine.waitFor('own frame', () => mine.frames('telemetry').length >= 1);
      await theirs.waitFor('own frame', () => theirs.frames('telemetry').length >= 1);
      await reading(foreign, 'environment.humidity', 9, other.projectId);
      await theirs.waitFor('second', () => theirs.frames('telemetry').length >= 2);
      expect(mine.frames('telemetry').map((f) => [f.data.deviceId, f.data.value])).to.deep.equal([
        [deviceA, 7],
      ]);
      expect(theirs.frames('telemetry').map((f) => [f.data.deviceId, f.data.value])).to.deep.equal([
        [foreign, 8],
        [foreign, 9],
      ]);
      expect(mine.frames().filter((f) => f.data.deviceId === foreign)).to.deep.equal([]);
      expect(theirs.frames().filter((f) => f.data.deviceId !== foreign)).to.deep.equal([]);
      expect(asking.status, 'the narrowing stream is open').to.equal(200);
      expect(asking.frames()).to.deep.equal([]);
    });
  });

  describe('concurrent-stream limit', () => {
    it("answers HEAD with a stream's status and headers, holding no slot: the full limit opens after it", async () => {
      const head = (as = token, query = '') =>
        fetch(`${api.baseUrl}/v1/live${query}`, {
          method: 'HEAD',
          headers: as ? { Authorization: `Bearer ${as}` } : {},
          signal: AbortSignal.timeout(10_000),
        });
      const answers = await Promise.all(Array.from({ length: 6 }, () => head()));
      for (const answer of answers) {
        expect(answer.status).to.equal(200);
        expect(answer.headers.get('content-type')).to.match(/^text\/event-stream/);
        expect(answer.headers.get('cache-control')).to.equal('no-store, no-transform');
        expect(await answer.text()).to.equal('');
      }
      expect(api.live.streamCount, 'no stream opened').to.equal(0);
      // Checked as GET is.
      expect((await head('')).status).to.equal(401);
      expect((await head(token, '?types=nothing')).status).to.equal(400);
      const streams = [await live(), await live(), await live(), await live()];
      expect(streams.map((s) => s.status)).to.deep.equal([200, 200, 200, 200]);
      // With every slot held, HEAD still answers: it holds none.
      expect((await head()).status).to.equal(200);
      expect((await live()).status).to.equal(429);
    });

    it('answers 429 with Retry-After past the limit, and frees a slot the moment a stream closes', async () => {
      const streams = [await live(), await live(), await live(), await live()];
      expect(streams.map((s) => s.status)).to.deep.equal([200, 200, 200, 200]);
      const refused = await live();
      expect(refused.status).to.equal(429);
      expect(refused.headers.get('retry-after')).to.match(/^\d+$/);
      expect(refused.body).to.deep.include({ error: 'rate_limited', reason: 'too_many_streams', limit: 4 });
      // Another client of the same project has its own slots.
      const second = await createTenant(api, LIVE);
      expect((await live(undefined, undefined, await second.token())).status).to.equal(200);
      streams[0]!.close();
      const deadline = Date.now() + 2000;
      let reopened = await live();
      while (reopened.status === 429 && Date.now() < deadline) reopened = await live();
      expect(reopened.status).to.equal(200);
      expect((await live()).status).to.equal(429);
    });
  });
});
