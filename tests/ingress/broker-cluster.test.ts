import { expect } from 'chai';
import { Redis } from 'ioredis';
import type { MqttClient } from 'mqtt';
import { freePort } from '../../src/infra/ports.js';
import { REDIS_URL, dropNamespace, redisProxy, requireRedis, testNamespace } from '../support/redis.js';
import * as fixture from './support/broker-fixture.js';

const A = 'agent-a';
const DOWN = `dc/v1/agents/${A}/down/#`;
const PAIRING = `dc/v1/agents/${A}/down/pairing`;

const permit = (sessionId: string) => ({
  action: 'permit' as const,
  sessionId,
  hubId: 'hub-a',
  until: '2030-01-01T00:00:00Z',
});

describe('two broker nodes sharing Redis (real TLS, real MQTT clients, real Redis)', function () {
  let namespace: string;
  let one: fixture.BrokerFixture;
  let two: fixture.BrokerFixture;
  /** Per node, the agents whose connection there another node took over. */
  let movedAway: { one: string[]; two: string[] };

  before(async function () {
    await requireRedis(this);
  });

  beforeEach(async function () {
    // Runs side by side on one Redis never see each other's sessions or routes.
    namespace = testNamespace('broker');
    const cluster = { redisUrl: REDIS_URL, namespace };
    movedAway = { one: [], two: [] };
    one = await fixture.startBrokerFixture({ cluster, onAgentMovedAway: (id) => movedAway.one.push(id) });
    two = await fixture.startBrokerFixture({ cluster, onAgentMovedAway: (id) => movedAway.two.push(id) });
    for (const node of [one, two]) node.directory.add(A, 'hub-a', ['dev-a1']);
  });

  afterEach(async function () {
    await one?.close();
    await two?.close();
    await dropNamespace(namespace);
  });

  after(async function () {
    await fixture.removeSharedAuthority();
  });

  async function agentOn(node: fixture.BrokerFixture): Promise<MqttClient> {
    const client = node.connect({ clientId: A, certificate: await node.certificateFor(A) });
    await fixture.connected(client);
    await fixture.within(client.subscribeAsync(DOWN, { qos: 1 }), fixture.WAIT_MS, 'subscribe');
    return client;
  }

  it('an agent that moves to the other node is taken over there; only its last connection reports it offline', async function () {
    const first = await agentOn(one);
    expect(one.broker.holdsAgent(A)).to.equal(true);
    const firstClosed = fixture.closed(first);
    const moved = await agentOn(two);
    await firstClosed; // the takeover happened: node one closed its connection because of node two's
    await fixture.eventually(() => !one.broker.holdsAgent(A), 'node one let go of the agent');
    expect(two.broker.holdsAgent(A)).to.equal(true);
    // Node one dropping the old connection's subscriptions must not drop the new one's.
    const heard = fixture.nextMessage(moved, PAIRING);
    await two.broker.publishDown(A, 'pairing', permit('after-move'));
    expect(JSON.parse(await heard)).to.include({ sessionId: 'after-move' });

    await fixture.within(
      moved.publishAsync(`dc/v1/agents/${A}/devices/dev-a1/readings`, fixture.readings(1), { qos: 1 }),
      fixture.WAIT_MS,
      'PUBACK',
    );
    await fixture.within(moved.endAsync(), fixture.WAIT_MS, 'clean disconnect');
    await fixture.eventually(() => two.offline.length > 0, 'node two reported the agent offline');
    await fixture.within(one.broker.close(), fixture.WAIT_MS, 'node one closed'); // every handler it started has settled
    await fixture.within(two.broker.close(), fixture.WAIT_MS, 'node two closed');
    expect(one.offline, 'node one, which the agent left').to.deep.equal([]);
    expect(movedAway.one, 'node one forgot the agent for itself').to.deep.equal([A]);
    expect(two.offline).to.deep.equal([A]);
    expect(two.uplinks.map((u) => u.agentId)).to.deep.equal([A]);
    expect(one.uplinks).to.deep.equal([]);
  });

  it('a connection that never subscribed is taken over the same way: its node does not report it offline', async function () {
    // Without a subscription to drop, aedes reports the end at once: only a mark made before its own
    // takeover listener runs can keep the old node quiet.
    const first = one.connect({ clientId: A, certificate: await one.certificateFor(A) });
    await fixture.connected(first);
    const firstClosed = fixture.closed(first);
    const moved = await agentOn(two);
    await firstClosed;
    await fixture.within(moved.endAsync(), fixture.WAIT_MS, 'clean disconnect');
    await fixture.eventually(() => two.offline.length > 0, 'node two reported the agent offline');
    await fixture.within(one.broker.close(), fixture.WAIT_MS, 'node one closed');
    expect(one.offline).to.deep.equal([]);
    expect(movedAway.one).to.deep.equal([A]);
  });

  it('a connection let in after the agent connected elsewhere takes it over in turn; the node it left reports nothing', async function () {
    // Node one's authentication waits on its directory until node two has announced its connection.
    let letIn!: () => void;
    const held = new Promise<void>((resolve) => (letIn = resolve));
    const lookup = one.directory.getAgent.bind(one.directory);
    let asked = false;
    one.directory.getAgent = async (agentId) => {
      asked = true;
      await held;
      return lookup(agentId);
    };
    const slow = one.connect({ clientId: A, certificate: await one.certificateFor(A) });
    await fixture.eventually(() => asked, 'node one authenticating');
    const other = await agentOn(two);
    const otherClosed = fixture.closed(other);
    letIn();
    await fixture.connected(slow);
    await otherClosed; // node one's connection, registered last, took over node two's
    await fixture.within(slow.endAsync(), fixture.WAIT_MS, 'clean disconnect');
    await fixture.eventually(() => one.offline.length > 0, 'node one reported the agent offline');
    await fixture.within(two.broker.close(), fixture.WAIT_MS, 'node two closed');
    expect(one.offline).to.deep.equal([A]);
    expect(two.offline).to.deep.equal([]);
    expect(movedAway).to.deep.equal({ one: [], two: [A] });
  });

  it('a will is stored for every node naming the connection it speaks for; the disconnect names it too', async function () {
    const agent = await agentOn(one);
    await fixture.within(
      agent.publishAsync(`dc/v1/agents/${A}/status`, JSON.stringify({ state: 'online' }), { qos: 1 }),
      fixture.WAIT_MS,
      'PUBACK',
    );
    const connectionId = one.uplinks.find((u) => u.topic.kind === 'agentStatus')?.connectionId;
    expect(connectionId, 'the session named its connection').to.be.a('string').with.length.above(8);
    // What a node that outlives this one would publish if this one died: the stored will, stamped.
    const redis = new Redis(REDIS_URL);
    try {
      const [key] = await redis.keys(`${namespace}:will:*:${A}`);
      expect(key, 'a will stored under the namespace').to.be.a('string');
      const stored = await redis.getBuffer(key!);
      expect(
        stored?.includes(Buffer.from(connectionId!)),
        'the stored will carries the connection id',
      ).to.equal(true);
    } finally {
      redis.disconnect();
    }
    await fixture.within(agent.endAsync(), fixture.WAIT_MS, 'clean disconnect');
    await fixture.eventually(() => one.offline.length > 0, 'node one reported the agent offline');
    expect(one.offlineConnections).to.deep.equal([connectionId]);
  });

  it('a node whose Redis cannot be reached refuses to start, naming why', async function () {
    const nowhere = `redis://127.0.0.1:${await freePort()}`;
    const error = await fixture
      .startBrokerFixture({
        cluster: { redisUrl: nowhere, namespace, connectTimeoutMs: 1000 },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).to.be.instanceOf(Error);
    expect((error as Error).message).to.match(/cannot reach Redis/);
  });

  it('a node whose Redis went away still shuts down, within its deadlines', async function () {
    const proxy = await redisProxy();
    const node = await fixture.startBrokerFixture({ cluster: { redisUrl: proxy.url, namespace } });
    try {
      node.directory.add(A, 'hub-a', ['dev-a1']);
      await agentOn(node);
      proxy.cut(); // Redis is gone for this node: nothing will confirm its goodbyes
      await fixture.within(node.broker.close(), 10_000, 'the node closed without Redis');
      await node.close();
    } finally {
      proxy.close();
    }
  });

  it('a downlink both nodes are asked to send reaches the agent once, from the node it is connected to', async function () {
    const agent = await agentOn(two);
    const heard: string[] = [];
    agent.on('message', (topic, payload) => {
      if (topic === PAIRING) heard.push((JSON.parse(payload.toString()) as { sessionId: string }).sessionId);
    });
    // Every node's dispatcher follows the store and sees the same event: node one's turn comes first, so a
    // copy routed from it over Redis would arrive before the marker node two sends after it.
    await one.broker.publishDown(A, 'pairing', permit('s1'));
    await two.broker.publishDown(A, 'pairing', permit('s1'));
    await two.broker.publishDown(A, 'pairing', permit('marker'));
    await fixture.eventually(() => heard.includes('marker'), 'the marker downlink');
    expect(heard).to.deep.equal(['s1', 'marker']);
  });
});
