import { expect } from 'chai';
import { Redis } from 'ioredis';
import type { MqttClient } from 'mqtt';
import { freePort } from '../../src/infra/ports.js';
import { RUN_ID } from '../support/run-directory.js';
import {
  WAIT_MS,
  closed,
  connected,
  eventually,
  nextMessage,
  readings,
  removeSharedAuthority,
  startBrokerFixture,
  within,
  type BrokerFixture,
} from './support/broker-fixture.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const A = 'agent-a';
const DOWN = `dc/v1/agents/${A}/down/#`;
const PAIRING = `dc/v1/agents/${A}/down/pairing`;

/** Redis answers within a second, or the cluster cases cannot run here. */
async function redisReachable(): Promise<boolean> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

const permit = (sessionId: string) => ({
  action: 'permit' as const,
  sessionId,
  hubId: 'hub-a',
  until: '2030-01-01T00:00:00Z',
});

describe('two broker nodes sharing Redis (real TLS, real MQTT clients, real Redis)', function () {
  let namespace: string;
  let one: BrokerFixture;
  let two: BrokerFixture;
  let count = 0;

  before(async function () {
    if (!(await redisReachable())) {
      console.log(
        `      (pending: no Redis at ${new URL(REDIS_URL).host}; set REDIS_URL to run the broker cluster cases)`,
      );
      this.skip();
    }
  });

  beforeEach(async function () {
    // Runs side by side on one Redis never see each other's sessions or routes.
    namespace = `dctest_${RUN_ID}_${++count}`;
    const cluster = { redisUrl: REDIS_URL, namespace };
    one = await startBrokerFixture({ cluster });
    two = await startBrokerFixture({ cluster });
    for (const node of [one, two]) node.directory.add(A, 'hub-a', ['dev-a1']);
  });

  afterEach(async function () {
    await one?.close();
    await two?.close();
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys(`${namespace}:*`);
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  });

  after(async function () {
    await removeSharedAuthority();
  });

  async function agentOn(node: BrokerFixture): Promise<MqttClient> {
    const client = node.connect({ clientId: A, certificate: await node.certificateFor(A) });
    await connected(client);
    await within(client.subscribeAsync(DOWN, { qos: 1 }), WAIT_MS, 'subscribe');
    return client;
  }

  it('an agent that moves to the other node is taken over there; only its last connection reports it offline', async function () {
    const first = await agentOn(one);
    expect(one.broker.holdsAgent(A)).to.equal(true);
    const firstClosed = closed(first);
    const moved = await agentOn(two);
    await firstClosed; // the takeover happened: node one closed its connection because of node two's
    await eventually(() => !one.broker.holdsAgent(A), 'node one let go of the agent');
    expect(two.broker.holdsAgent(A)).to.equal(true);
    // Node one dropping the old connection's subscriptions must not drop the new one's.
    const heard = nextMessage(moved, PAIRING);
    await two.broker.publishDown(A, 'pairing', permit('after-move'));
    expect(JSON.parse(await heard)).to.include({ sessionId: 'after-move' });

    await within(
      moved.publishAsync(`dc/v1/agents/${A}/devices/dev-a1/readings`, readings(1), { qos: 1 }),
      WAIT_MS,
      'PUBACK',
    );
    await within(moved.endAsync(), WAIT_MS, 'clean disconnect');
    await eventually(() => two.offline.length > 0, 'node two reported the agent offline');
    await within(one.broker.close(), WAIT_MS, 'node one closed'); // every handler it started has settled
    await within(two.broker.close(), WAIT_MS, 'node two closed');
    expect(one.offline, 'node one, which the agent left').to.deep.equal([]);
    expect(two.offline).to.deep.equal([A]);
    expect(two.uplinks.map((u) => u.agentId)).to.deep.equal([A]);
    expect(one.uplinks).to.deep.equal([]);
  });

  it('a node whose Redis cannot be reached refuses to start, naming why', async function () {
    const nowhere = `redis://127.0.0.1:${await freePort()}`;
    const error = await startBrokerFixture({
      cluster: { redisUrl: nowhere, namespace, connectTimeoutMs: 1000 },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(Error);
    expect((error as Error).message).to.match(/broker cluster: cannot reach Redis/);
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
    await eventually(() => heard.includes('marker'), 'the marker downlink');
    expect(heard).to.deep.equal(['s1', 'marker']);
  });
});
