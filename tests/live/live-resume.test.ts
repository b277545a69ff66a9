import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { createApiApp, createLiveHub } from '../../src/api/app.js';
import { createHttpServer, listen } from '../../src/api/server.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { DAY_MS } from '../../src/domain/time.js';
import type { EventStore, SubscribeOptions } from '../../src/eventstore/port.js';
import { deleteExpiredReadings } from '../../src/ingress/readings/retention.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { until } from '../support/edge-agent.js';
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
  /** Every position in the store, the head's among them. */
  const positionsInStore = async () => {
    const page = await api.store.readAll({ maxCount: 100_000 });
    return page.events.map((e) => e.position);
  };
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
  /** The test API's store with one method replaced (made from the real store); the rest pass through. */
  const storeWith = <K extends keyof EventStore>(method: K, replace: (target: EventStore) => EventStore[K]) =>
    new Proxy(api.store, {
      get(target, property) {
        if (property === method) return replace(target);
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as EventStore;
  /** Another API process on the same store: its own live hub and HTTP server. */
  const otherProcess = async (store: EventStore = api.store) => {
    const logger = createLogger('silent');
    const hub = createLiveHub({ config: api.config, logger, store, pool: api.db.pool });
    await hub.start();
    const app = createApiApp({
      config: api.config,
      logger,
      metrics: createMetrics(),
      pool: api.db.pool,
      store,
      live: hub,
    });
    const server = await listen(createHttpServer(app, api.config), 0, '127.0.0.1');
    const { port } = server.address() as { port: number };
    return {
      hub,
      baseUrl: `http://127.0.0.1:${port}`,
      async close() {
        await hub.close();
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  };

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
    expect(values(frames)).to.deep.equal([...values(frames)].sort((a, b) => Number(a) - Number(b)));
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
    const peer = await otherProcess();
    try {
      const other = await live('types=telemetry', { 'Last-Event-ID': first.frames()[0]!.id! }, peer.baseUrl);
      await readings(1);
      await first.waitFor('nine', () => first.frames().length >= 9);
      await other.waitFor('eight', () => other.frames().length >= 8);
      expect(other.frames()).to.deep.equal(first.frames().slice(1));
    } finally {
      await peer.close();
    }
  });

  it('rests while no stream is open: no subscription then, and a new stream wakes it at the head', async () => {
    // The same store, with the hub's subscriptions recorded: where each starts and whether it has ended.
    const subscriptions: { after: string | undefined; ended: boolean }[] = [];
    const store = storeWith('subscribeToAll', (target) => (options: SubscribeOptions) => {
      const record = { after: options.after, ended: false };
      subscriptions.push(record);
      const source = target.subscribeToAll(options);
      return {
        async *[Symbol.asyncIterator]() {
          try {
            yield* source;
          } finally {
            record.ended = true;
          }
        },
      };
    });
    const peer = await otherProcess(store);
    const { hub, baseUrl } = peer;
    try {
      await readings(1);
      expect(subscriptions, 'no subscription before the first stream').to.have.length(0);

      const first = await live('types=telemetry', {}, baseUrl);
      await until('the hub to subscribe', async () => subscriptions.length || undefined);
      expect(subscriptions).to.have.length(1);
      expect(subscriptions[0]!.after).to.equal(await api.store.headPosition());
      await readings(1);
      await first.waitFor('three', () => first.frames().length >= 3);
      const lastSeen = first.frames()[2]!;
      first.close();
      await until('the stream to close', async () => hub.streamCount === 0 || undefined);

      // The next batch finds no stream open: the hub stops its subscription instead of building frames.
      await readings(2);
      await until('the subscription to stop', async () => subscriptions[0]!.ended || undefined);
      const head = await api.store.headPosition();
      const second = await live('types=telemetry', {}, baseUrl);
      await until('the hub to wake', async () => subscriptions.length > 1 || undefined);
      expect(subscriptions, 'woken once, at the head, past what came while resting').to.have.length(2);
      expect(subscriptions[1]!.after).to.equal(head);
      await readings(1);
      await second.waitFor('three', () => second.frames().length >= 3);
      const latest = values(second.frames());
      expect(latest).to.deep.equal([value - 2, value - 1, value]);

      // What came while it rested is still there for a resume: read from the store.
      const resumed = await live('types=telemetry', { 'Last-Event-ID': lastSeen.id! }, baseUrl);
      await resumed.waitFor('nine', () => resumed.frames().length >= 9);
      expect(values(resumed.frames())).to.deep.equal(Array.from({ length: 9 }, (_, i) => value - 8 + i));
      expect(values(second.frames())).to.deep.equal(latest);
    } finally {
      await peer.close();
    }
  });

  it('begins its answer only once it knows where it starts: a reading appended as soon as the client sees it arrives', async () => {
    // The woken hub's read of the head is held until the client has appended a reading after seeing the
    // answer begin (at most 500 ms). Had the answer begun before that read, the reading would lie before the
    // stream's start and never arrive; it must instead be impossible for the client to see the answer first.
    let appended = false;
    let headRead: number | undefined;
    const store = storeWith('headPosition', (target) => async () => {
      for (const deadline = Date.now() + 500; !appended && Date.now() < deadline;) await sleep(10);
      const head = await target.headPosition();
      headRead ??= performance.now();
      return head;
    });
    const peer = await otherProcess(store);
    try {
      const stream = await live('types=telemetry', {}, peer.baseUrl);
      const answerSeen = performance.now();
      await readings(1);
      appended = true;
      expect(headRead, "the hub's head read, done before the client saw the answer").to.be.a('number');
      expect(headRead!).to.be.at.most(answerSeen);
      await stream.waitFor('three', () => stream.frames().length >= 3);
      expect(values(stream.frames())).to.deep.equal([value - 2, value - 1, value]);
    } finally {
      await peer.close();
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
      expect(gap!.id, 'a gap carries an id to resume from').to.match(SEALED_ID);
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

  it("answers another project's id with unknown_id: it replays nothing of theirs and shows no position", async () => {
    const other = await createTenant(api, ['telemetry:live']);
    const mine = await live('types=telemetry');
    await readings(1);
    await mine.waitFor('three', () => mine.frames().length >= 3);
    const theirs = await openLive(api.baseUrl, {
      token: await other.token(),
      query: 'types=telemetry',
      headers: { 'Last-Event-ID': mine.frames()[0]!.id! },
    });
    open.push(theirs);
    await readings(1);
    await mine.waitFor('six', () => mine.frames().length >= 6);
    await theirs.waitFor('the gap', () => theirs.frames().length);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(theirs.status).to.equal(200);
    const [gap, ...rest] = theirs.frames();
    expect(rest).to.deep.equal([]);
    expect(gap!.type).to.equal('replay_gap');
    expect(gap!.data).to.have.all.keys('reason', 'types', 'from', 'to', 'deviceIds');
    expect(gap!.data).to.include({ reason: 'unknown_id', from: null, deviceIds: null });
    // The id to resume from is theirs alone and names no position: not the head's, in any spelling.
    expect(gap!.id).to.match(SEALED_ID);
    expectNoPosition([gap!.id!], await positionsInStore());
    const back = await live('types=telemetry', { 'Last-Event-ID': gap!.id! });
    await back.waitFor('the gap', () => back.frames().length);
    expect(back.frames()[0]!.data.reason).to.equal('unknown_id');
  });

  it('answers a changed id with unknown_id', async () => {
    const first = await live('types=telemetry');
    await readings(2);
    await first.waitFor('six', () => first.frames().length >= 6);
    const id = first.frames()[1]!.id!;
    // One character near the end changed (within the same alphabet), one appended, or the id cut short.
    const at = id.length - 2;
    const changed = id.slice(0, at) + (id[at] === '0' ? '1' : '0') + id.slice(at + 1);
    for (const forged of [changed, `${id}0`, id.slice(0, -1)]) {
      const resumed = await live('types=telemetry', { 'Last-Event-ID': forged });
      await resumed.waitFor('the gap', () => resumed.frames().length);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(resumed.frames().map((f) => [f.type, f.data.reason])).to.deep.equal([
        ['replay_gap', 'unknown_id'],
      ]);
    }
  });

  it('gives ids that show no store position, and the same id to the same frame on every stream', async () => {
    const first = await live('types=telemetry');
    const second = await live('types=telemetry');
    await readings(3);
    await first.waitFor('nine', () => first.frames().length >= 9);
    await second.waitFor('nine', () => second.frames().length >= 9);
    const ids = first.frames().map((f) => f.id!);
    for (const id of ids) expect(id).to.match(SEALED_ID);
    expect(second.frames().map((f) => f.id)).to.deep.equal(ids);
    expectNoPosition(ids, await positionsInStore());
  });
});

/** The shape of a frame id: base64url, 53 sealed bytes (frame-id.ts). */
const SEALED_ID = /^[\w-]{71}$/;

/** Neither the position nor its bytes in base64url appear in any id. */
function expectNoPosition(ids: readonly string[], positions: readonly string[]): void {
  for (const position of positions) {
    const spellings = [
      position,
      position.replace(/^0+/, ''),
      Buffer.from(position, 'hex').toString('base64url'),
    ];
    for (const id of ids)
      for (const spelling of spellings.filter((p) => p.length >= 8))
        expect(id.toLowerCase(), `${id} shows ${spelling}`).to.not.include(spelling.toLowerCase());
  }
}
