import path from 'node:path';
import { expect } from 'chai';
import type { MqttClient } from 'mqtt';
import { registerAgent } from '../../src/agents/register.js';
import { readingsStreamName } from '../../src/domain/readings/index.js';
import { uplinkTopic } from '../../src/ingress/broker/topics.js';
import { loadOrCreateAuthority } from '../../src/ingress/pki/authority.js';
import { createProject } from '../../src/identity/projects.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';
import { siteOf } from '../support/registry.js';
import { connectAsAgent, metricSample, within } from './support/broker-fixture.js';

// Small limits keep the test short; the assertions are lower bounds on time, which a slow machine only
// makes easier to meet.
const RATE = 40;
const BURST = 20;
const METRICS_TOKEN = 'q'.repeat(40);

interface Agent {
  readonly agentId: string;
  readonly hubId: string;
  readonly client: MqttClient;
}

/** One single-reading message for the hub, with its own seq. */
function publish(agent: Agent, seq: number): Promise<number> {
  const payload = JSON.stringify({ seq, readings: [{ capability: 'system.uptime', value: seq }] });
  return new Promise((resolve, reject) => {
    agent.client.publish(uplinkTopic.readings(agent.agentId, agent.hubId), payload, { qos: 1 }, (error) =>
      error ? reject(error) : resolve(performance.now()),
    );
  });
}

describe('per-agent readings quota: over it, the PUBACK waits (real broker, TLS, MQTT client)', function () {
  this.timeout(120_000);
  let edge: EdgeService;
  let projectId: string;
  let siteId: string;
  const clients: MqttClient[] = [];

  before(async () => {
    edge = await startEdgeService({
      settings: {
        READINGS_QUOTA_PER_SECOND: String(RATE),
        READINGS_QUOTA_BURST: String(BURST),
        METRICS_TOKEN,
      },
    });
    projectId = (await createProject(edge.store, { name: 'quota' })).projectId;
    siteId = await siteOf(edge, projectId);
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
    await edge?.close();
  });

  async function connectAgent(options: { reconnect?: boolean } = {}): Promise<Agent> {
    const authority = await loadOrCreateAuthority(path.join(edge.dataDir, 'pki'));
    const agent = await registerAgent(edge.store, authority, { projectId, siteId });
    await edge.catchUp();
    const client = await connectAsAgent(edge.mqttPort, authority.certificatePem, agent, options);
    clients.push(client);
    return { agentId: agent.agentId, hubId: agent.hubId, client };
  }

  async function storedSeqs(hubId: string): Promise<number[]> {
    const events = await edge.store.readStream(readingsStreamName(hubId));
    return events.map((e) => (e.data as { seq: number }).seq).sort((a, b) => a - b);
  }

  const metric = (series: string) => metricSample(edge.baseUrl, METRICS_TOKEN, series);

  it('paces a flooding agent to its quota on one open connection, stores every acknowledged reading, and leaves another agent alone', async () => {
    const flooder = await connectAgent();
    const neighbour = await connectAgent();
    let closes = 0;
    flooder.client.on('close', () => (closes += 1));
    const messages = 200;

    const start = performance.now();
    const flood = Array.from({ length: messages }, (_, seq) => publish(flooder, seq));
    // The neighbour publishes once the flooder is over its burst and held back.
    await within(Promise.all(flood.slice(0, BURST)), 20_000, "the flooder's burst");
    const neighbourAcks = await within(
      Promise.all(Array.from({ length: 10 }, (_, seq) => publish(neighbour, seq))),
      20_000,
      "the neighbour's PUBACKs",
    );
    const floodAcks = (await within(Promise.all(flood), 30_000, "the flooder's PUBACKs")).map(
      (t) => t - start,
    );

    // Throttled: the k-th PUBACK cannot come before the bucket held k readings (burst, then RATE a second).
    // The server reserves at or after `start`, so these are lower bounds however slow the machine is.
    const sorted = [...floodAcks].sort((a, b) => a - b);
    const early = sorted
      .map((at, i) => ({ k: i + 1, at, earliest: ((i + 1 - BURST) / RATE) * 1000 - 50 }))
      .filter(({ at, earliest }) => at < earliest);
    expect(early, 'PUBACKs faster than the quota').to.deep.equal([]);
    expect(sorted.at(-1)).to.be.at.least(((messages - BURST) / RATE) * 1000 - 50);
    // ... by back-pressure, not by refusals: the connection stayed open throughout.
    expect(closes).to.equal(0);
    expect(flooder.client.connected).to.equal(true);

    // The neighbour, within its own quota, was answered while the flooder was still held back.
    expect(Math.max(...neighbourAcks) - start).to.be.below(sorted.at(-1)!);

    // Every acknowledged reading is stored, once.
    expect(await storedSeqs(flooder.hubId)).to.deep.equal(Array.from({ length: messages }, (_, i) => i));
    expect(await storedSeqs(neighbour.hubId)).to.deep.equal(Array.from({ length: 10 }, (_, i) => i));
    // Counted per held-back message: some of the flooder's, at most those beyond its burst, none of the
    // neighbour's (it stayed within its burst).
    expect(await metric('devcloud_readings_over_quota_total')).to.be.within(1, messages - BURST);
  });

  it('an agent whose connection drops while held back sends the rest again and nothing is lost or doubled', async () => {
    const agent = await connectAgent({ reconnect: true });
    const messages = 80;
    let acked = 0;
    const acks = Array.from({ length: messages }, (_, seq) => publish(agent, seq).then(() => (acked += 1)));
    await within(Promise.all(acks.slice(0, BURST)), 20_000, 'the burst');
    const reconnected = new Promise<void>((resolve) => agent.client.once('connect', () => resolve()));
    // A network failure, not a clean disconnect, while most messages are still held back.
    agent.client.stream.destroy();
    expect(acked).to.be.below(messages - 10);
    await within(reconnected, 20_000, 'the reconnect');
    await within(Promise.all(acks), 30_000, 'every PUBACK after the reconnect');
    expect(await storedSeqs(agent.hubId)).to.deep.equal(Array.from({ length: messages }, (_, i) => i));
    // The waits the drop cut short are not storage failures.
    expect(await metric('devcloud_mqtt_rejected_total{reason="uplink_failed"}')).to.equal(0);
  });
});
