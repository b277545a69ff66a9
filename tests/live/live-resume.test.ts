import { expect } from 'chai';
import { createApiApp, createLiveHub } from '../../src/api/app.js';
import { createHttpServer, listen } from '../../src/api/server.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { DAY_MS } from '../../src/domain/time.js';
import { deleteExpiredReadings } from '../../src/ingress/readings/retention.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { openLive, type Frame, type OpenLive } from '../support/live.js';
import { recordReadings } from '../support/readings.js';
import { deviceOf, siteOf } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';

describe('GET /v1/live: resume, replay_gap, several processes', function () {
  this.timeout(60_000);
  let api: TestApi;
  let tenant: Tenant;
  let token: string;
  let device: string;
  const open: OpenLive[] = [];
  const live = async (query?: string, headers?: Record<string, string>, baseUrl = api.baseUrl) => {
    const stream = await openLive(baseUrl, { token, query, headers });
    open.push(stream);
    return stream;
  };
  let value = 0;
  /** `messages` readings events of three readings each, all appended in one batch. */
  const readings = (messages: number) =>
    recordReadings(
      api.store,
      ...Array.from({ length: messages }, () => ({
        deviceId: device,
        projectId: tenant.projectId,
        receivedAt: new Date().toISOString(),
        readings: ['environment.temperature', 'environment.humidity', 'environment.temperature'].map(
          (capability) => ({ capability, value: ++value }),
        ),
      })),
    );
  const values = (frames: readonly Frame[]) => frames.map((f) => f.data.value);

  before(async () => {
    // A window of five frames: resumes further back are served by reading the store.
    api = await startTestApi({ LIVE_WINDOW_FRAMES: '5' });
    tenant = await createTenant(api, ['telemetry:live', 'telemetry:read', 'devices:read']);
    token = await tenant.token();
    device = await deviceOf(api, tenant.projectId, await siteOf(api, tenant.projectId));
  });
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });
  after(() => api.close());

  it('gives every reading of one event its own id, in order, and resumes exactly inside an event', async () => {
    const first = await live('types=telemetry');
    await readings(2);
    const frames = await first.waitFor('six frames', () =>
      first.frames().length >= 6 ? first.frames() : undefined,
    );
    const ids = frames.map((f) => f.id!);
    expect(new Set(ids).size).to.equal(6);
    expect(ids).to.deep.equal([...ids].sort());
    first.close();
    // From the window (the last five frames) and from the store (further back), by header and by query.
    for (const [from, how] of [
      [4, 'header'],
      [1, 'header'],
      [0, 'query'],
    ] as const) {
      const resumed =
        how === 'header'
          ? await live('types=telemetry', { 'Last-Event-ID': ids[from]! })
          : await live(`types=telemetry&lastEventId=${ids[from]}`);
      await resumed.waitFor('the rest', () => resumed.frames().length >= 5 - from);
      expect(resumed.frames().map((f) => f.id)).to.deep.equal(ids.slice(from + 1));
      resumed.close();
    }
  });

  it('joins live without a seam after a catch-up read, while events keep coming', async () => {
    const first = await live('types=telemetry');
    await readings(5);
    await first.waitFor('fifteen', () => first.frames().length >= 15);
    const start = first.frames()[2]!.id!;
    const writing = (async () => {
      for (let i = 0; i < 20; i++) await readings(3);
    })();
    const resumed = await live('types=telemetry', { 'Last-Event-ID': start });
    await writing;
    const total = 15 + 20 * 9;
    await first.waitFor('all', () => first.frames().length >= total);
    await resumed.waitFor('all after the start', () => resumed.frames().length >= total - 3);
    expect(resumed.frames().map((f) => f.id)).to.deep.equal(
      first
        .frames()
        .slice(3)
        .map((f) => f.id),
    );
    expect(values(resumed.frames())).to.deep.equal(values(first.frames()).slice(3));
  });

  it('gives identical frames and ids from another process with its own hub, even for events older than it', async () => {
    const first = await live('types=telemetry');
    await readings(2);
    await first.waitFor('six', () => first.frames().length >= 6);
    const logger = createLogger('silent');
    const hub = createLiveHub({ config: api.config, logger, store: api.store });
    await hub.start();
    const app = createApiApp({
      config: api.config,
      logger,
      metrics: createMetrics(),
      pool: api.db.pool,
      store: api.store,
      live: hub,
    });
    const server = await listen(createHttpServer(app, api.config), 0, '127.0.0.1');
    try {
      const { port } = server.address() as { port: number };
      const other = await live(
        'types=telemetry',
        { 'Last-Event-ID': first.frames()[0]!.id! },
        `http://127.0.0.1:${port}`,
      );
      await readings(1);
      await first.waitFor('nine', () => first.frames().length >= 9);
      await other.waitFor('eight', () => other.frames().length >= 8);
      expect(other.frames()).to.deep.equal(first.frames().slice(1));
    } finally {
      await hub.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('answers a garbage or unknown id with replay_gap, then continues live', async () => {
    for (const id of ['not-a-frame-id', 'f'.repeat(48)]) {
      const stream = await live('types=telemetry', { 'Last-Event-ID': id });
      await stream.waitFor('the gap', () => stream.frames('replay_gap').length);
      await readings(1);
      await stream.waitFor('live frames', () => stream.frames('telemetry').length >= 3);
      const [gap, ...rest] = stream.frames();
      expect(gap!.type).to.equal('replay_gap');
      expect(gap!.data).to.include({ reason: 'unknown_id', from: null, deviceIds: null });
      expect(gap!.data.types).to.deep.equal(['telemetry']);
      expect(gap!.id, 'a gap carries an id to resume from').to.match(/^[0-9a-f]{48}$/);
      expect(rest.map((f) => f.type)).to.deep.equal(['telemetry', 'telemetry', 'telemetry']);
      stream.close();
    }
    // What may be missing after an unknown id is whatever the stream follows, not only readings.
    const control = await live('types=device_status,command_update', { 'Last-Event-ID': 'not-a-frame-id' });
    await control.waitFor('the gap', () => control.frames('replay_gap').length);
    expect(control.frames('replay_gap')[0]!.data.types).to.deep.equal(['command_update', 'device_status']);
    control.close();
  });

  it('answers a resume from before the readings retention with replay_gap saying what was missed, then the rest', async () => {
    const first = await live(`types=telemetry,device_status&deviceIds=${device}`);
    await readings(2);
    const pruned = await first.waitFor('six', () =>
      first.frames().length >= 6 ? first.frames() : undefined,
    );
    const lastSeen = pruned[1]!;
    const { deleted } = await deleteExpiredReadings(api.store, {
      retentionDays: 1,
      now: Date.now() + 2 * DAY_MS,
    });
    expect(deleted, 'the readings were really deleted').to.be.greaterThan(0);
    await readings(1);
    await first.waitFor('nine', () => first.frames().length >= 9);
    const resumed = await live(`types=telemetry,device_status&deviceIds=${device}`, {
      'Last-Event-ID': lastSeen.id!,
    });
    await resumed.waitFor('gap and the new frames', () => resumed.frames().length >= 4);
    const [gap, ...rest] = resumed.frames();
    expect(gap!.type).to.equal('replay_gap');
    expect(gap!.data).to.deep.include({ reason: 'retention', types: ['telemetry'], deviceIds: [device] });
    expect(Date.parse(gap!.data.from as string)).to.be.at.most(Date.now());
    expect(Date.parse(gap!.data.to as string)).to.be.greaterThan(Date.parse(gap!.data.from as string));
    expect(rest.map((f) => f.id)).to.deep.equal(
      first
        .frames()
        .slice(6)
        .map((f) => f.id),
    );
    // A stream that did not ask for telemetry misses nothing: control-plane events are kept for ever.
    const statusOnly = await live('types=device_status', { 'Last-Event-ID': lastSeen.id! });
    expect(statusOnly.status, 'the status-only stream is open').to.equal(200);
    await readings(1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(statusOnly.frames('replay_gap')).to.deep.equal([]);
  });

  it('never replays a frame of another project, whatever id is sent', async () => {
    const other = await createTenant(api, ['telemetry:live']);
    const mine = await live('types=telemetry');
    await readings(1);
    await mine.waitFor('three', () => mine.frames().length >= 3);
    const theirs = await openLive(api.baseUrl, {
      token: await other.token(),
      headers: { 'Last-Event-ID': mine.frames()[0]!.id! },
    });
    open.push(theirs);
    await readings(1);
    await mine.waitFor('six', () => mine.frames().length >= 6);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(theirs.status).to.equal(200);
    expect(theirs.frames()).to.deep.equal([]);
  });
});
