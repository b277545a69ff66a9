import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import type { MqttClient } from 'mqtt';
import { RejectedMessage } from '../../src/ingress/rejected-message.js';
import { loadOrCreateAuthority } from '../../src/ingress/pki/authority.js';
import {
  MAX_PACKET_BYTES,
  WAIT_MS,
  closed,
  connected,
  eventually,
  nextMessage,
  readings,
  refused,
  removeSharedAuthority,
  sharedAuthority,
  startBrokerFixture,
  within,
  type BrokerFixture,
} from './support/broker-fixture.js';

const A = 'agent-a';
const B = 'agent-b';
const A_DOWN = `dc/v1/agents/${A}/down/#`;
const readingsTopic = (agentId: string, deviceId: string) =>
  `dc/v1/agents/${agentId}/devices/${deviceId}/readings`;

describe('MQTT broker security (real TLS, real MQTT clients)', function () {
  let f: BrokerFixture;
  let agentA: MqttClient;
  let marker = 0;

  beforeEach(async function () {
    f = await startBrokerFixture();
    f.directory.add(A, 'hub-a', ['dev-a1']);
    f.directory.add(B, 'hub-b', ['dev-b1']);
    agentA = f.connect({ clientId: A, certificate: await f.certificateFor(A) });
    await connected(agentA);
    await within(agentA.subscribeAsync(A_DOWN, { qos: 1 }), WAIT_MS, 'subscribe');
  });

  afterEach(async function () {
    await f.close();
  });

  after(async function () {
    await removeSharedAuthority();
  });

  /** The legitimate agent's uplink reaches the handler and its downlink reaches it, on the same connection. */
  async function legitimateTrafficFlows(): Promise<void> {
    expect(agentA.connected, 'agent-a still connected').to.equal(true);
    const value = ++marker;
    await within(
      agentA.publishAsync(readingsTopic(A, 'dev-a1'), readings(value), { qos: 1 }),
      WAIT_MS,
      'PUBACK',
    );
    expect(f.uplinks.some((u) => u.agentId === A && u.payload === readings(value))).to.equal(true);

    const down = nextMessage(agentA, `dc/v1/agents/${A}/down/pairing`);
    const sessionId = `s${value}`;
    await f.broker.publishDown(A, 'pairing', {
      action: 'permit',
      sessionId,
      hubId: 'hub-a',
      until: '2030-01-01T00:00:00Z',
    });
    expect(JSON.parse(await down)).to.include({ action: 'permit', sessionId });
  }

  /** mqtt.js fails a subscribe whose SUBACK says 0x80; returns the granted codes from that SUBACK. */
  async function subscriptionRefused(client: MqttClient, filter: string): Promise<number[]> {
    try {
      await within(client.subscribeAsync(filter, { qos: 1 }), WAIT_MS, 'SUBACK');
    } catch (error) {
      const granted = (error as { packet?: { granted?: number[] } }).packet?.granted;
      if (granted) return granted;
      throw error;
    }
    throw new Error(`subscription to ${filter} was granted`);
  }

  function rejected(reason: string): boolean {
    return f.rejections.some((r) => r.reason === reason);
  }

  it('lets a legitimate agent publish for its hub and devices and receive its downlink', async function () {
    await legitimateTrafficFlows();
    await within(agentA.publishAsync(readingsTopic(A, 'hub-a'), readings(1), { qos: 1 }), WAIT_MS, 'PUBACK');
    await within(
      agentA.publishAsync(`dc/v1/agents/${A}/status`, JSON.stringify({ state: 'online' }), { qos: 1 }),
      WAIT_MS,
      'PUBACK',
    );
    const kinds = f.uplinks.map((u) => u.topic.kind);
    expect(kinds).to.include.members(['readings', 'agentStatus']);
    expect(f.rejections).to.deep.equal([]);
  });

  describe('connection refusals', function () {
    it('refuses a connection without a client certificate', async function () {
      const client = f.connect({ clientId: B });
      await refused(client);
      await eventually(() => rejected('tls_handshake'), 'tls_handshake rejection');
      await legitimateTrafficFlows();
    });

    it('refuses a certificate from another CA', async function () {
      const { dir } = await sharedAuthority();
      const otherCa = await loadOrCreateAuthority(path.join(dir, 'other-pki'));
      const foreign = await otherCa.issueAgentCertificate({ agentId: B, validityDays: 1 });
      const client = f.connect({ clientId: B, certificate: foreign });
      await refused(client);
      await eventually(() => rejected('tls_handshake'), 'tls_handshake rejection');
      await legitimateTrafficFlows();
    });

    it('refuses a certificate of the CA that names no agent, such as the broker’s own', async function () {
      const { serverTls } = await sharedAuthority();
      const client = f.connect({ clientId: 'localhost', certificate: serverTls });
      await refused(client);
      // OpenSSL refuses it for its purpose (serverAuth only); the missing agent URI would refuse it next.
      expect(rejected('tls_handshake')).to.equal(true);
      await legitimateTrafficFlows();
    });

    it('refuses an expired certificate', async function () {
      const now = Date.now();
      const expired = await f.authority.issueAgentCertificate({
        agentId: B,
        validityDays: 1,
        validity: { notBefore: new Date(now - 2 * 86_400_000), notAfter: new Date(now - 86_400_000) },
      });
      const client = f.connect({ clientId: B, certificate: expired });
      await refused(client);
      await eventually(() => rejected('tls_handshake'), 'tls_handshake rejection');
      await legitimateTrafficFlows();
    });

    it('refuses MQTT 5 with CONNACK return code 1, as MQTT.js reports it (docs/mqtt.md)', async function () {
      const client = f.connect({ clientId: B, certificate: await f.certificateFor(B), protocolVersion: 5 });
      const error = new Promise<Error & { code?: number }>((resolve) => client.once('error', resolve));
      expect(await refused(client)).to.match(/unacceptable protocol version/i);
      const code = (await error).code;
      expect(code).to.equal(1);
      // The connection table's Protocol row tells agent authors what their client shows: keep it true.
      const docs = await readFile(new URL('../../docs/mqtt.md', import.meta.url), 'utf8');
      const protocolRow = docs.split('\n').find((line) => line.startsWith('| Protocol '));
      expect(protocolRow).to.include(`return code ${code}`).and.include('CONNACK (132)');
      await legitimateTrafficFlows();
    });

    it('refuses a revoked agent', async function () {
      f.directory.revoke(B);
      const client = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      expect(await refused(client)).to.match(/not authorized/i);
      expect(f.rejections).to.deep.include({ reason: 'revoked_agent', agentId: B });
      await legitimateTrafficFlows();
    });

    it('refuses a valid certificate for an agent the directory does not know', async function () {
      const client = f.connect({
        clientId: 'agent-ghost',
        certificate: await f.certificateFor('agent-ghost'),
      });
      expect(await refused(client)).to.match(/not authorized/i);
      expect(f.rejections).to.deep.include({ reason: 'unknown_agent', agentId: 'agent-ghost' });
      await legitimateTrafficFlows();
    });

    it('refuses a client id that differs from the certificate, without taking over that client id', async function () {
      // Agent B's certificate, agent A's client id: must neither connect nor kick agent A off.
      const client = f.connect({ clientId: A, certificate: await f.certificateFor(B) });
      expect(await refused(client)).to.match(/identifier rejected/i);
      expect(f.rejections).to.deep.include({ reason: 'client_id_mismatch', agentId: B });
      await legitimateTrafficFlows();
      expect(f.offline).to.deep.equal([]);
    });

    it('refuses a will on any topic other than the agent status topic', async function () {
      const client = f.connect({
        clientId: B,
        certificate: await f.certificateFor(B),
        will: {
          topic: readingsTopic(A, 'dev-a1'),
          payload: Buffer.from(readings(666)),
          qos: 1,
          retain: false,
        },
      });
      expect(await refused(client)).to.match(/not authorized/i);
      expect(f.rejections).to.deep.include({ reason: 'will_refused', agentId: B });
      await legitimateTrafficFlows();
      expect(f.uplinks.some((u) => u.payload === readings(666))).to.equal(false);
    });

    it('answers server unavailable while the directory is down, and recovers', async function () {
      f.directory.failing = true;
      const client = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      expect(await refused(client)).to.match(/server unavailable/i);
      f.directory.failing = false;
      const retry = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(retry);
    });
  });

  describe('revocation of a connected agent', function () {
    it('closes the live connection and refuses it from then on', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(agentB);
      f.directory.revoke(B);
      const wasConnected = await f.broker.disconnectAgent(B);
      expect(wasConnected).to.equal(true);
      await closed(agentB);
      await eventually(() => f.offline.includes(B), 'agent-b offline');

      const again = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      expect(await refused(again)).to.match(/not authorized/i);
      await legitimateTrafficFlows();
    });

    it('disconnects a connected agent found revoked when its record is refreshed', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(agentB);
      f.directory.revoke(B);
      await f.broker.refreshAgent(B).catch(() => undefined);
      await closed(agentB);
      await legitimateTrafficFlows();
    });

    it('disconnects an agent whose certificate expires while it is connected', async function () {
      this.timeout(20_000);
      // Long enough for the handshake on a loaded machine (one CI leg runs beside the other), which must
      // happen before the certificate expires for the case to be about a connected agent.
      const shortLived = await f.authority.issueAgentCertificate({
        agentId: B,
        validityDays: 1,
        validity: { notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 5_000) },
      });
      const agentB = f.connect({ clientId: B, certificate: shortLived });
      await connected(agentB);
      await closed(agentB, 10_000);
      expect(f.rejections).to.deep.include({ reason: 'certificate_expired', agentId: B });
      await legitimateTrafficFlows();
    });
  });

  describe('subscription ACL', function () {
    for (const filter of [
      '#',
      '+/#',
      `dc/v1/agents/${B}/down/#`,
      'dc/v1/agents/+/down/#',
      '$SYS/#',
      `dc/v1/agents/${A}/#`,
    ]) {
      it(`refuses a subscription to ${filter} and keeps the connection`, async function () {
        expect(await subscriptionRefused(agentA, filter)).to.deep.equal([128]);
        expect(f.rejections).to.deep.include({ reason: 'subscribe_denied', agentId: A });
        await legitimateTrafficFlows();
      });
    }

    it('never delivers another agent downlink, even with a refused subscription in place', async function () {
      await subscriptionRefused(agentA, `dc/v1/agents/${B}/down/#`);
      const leaked: string[] = [];
      agentA.on('message', (topic) => {
        if (topic.includes(B)) leaked.push(topic);
      });
      await f.broker.publishDown(B, 'pairing', { action: 'stop', sessionId: 's1', hubId: 'hub-b' });
      await legitimateTrafficFlows();
      expect(leaked).to.deep.equal([]);
    });
  });

  describe('publish ACL', function () {
    it('drops a publish for a device of another agent, without handling it, and keeps the connection', async function () {
      await within(
        agentA.publishAsync(readingsTopic(A, 'dev-b1'), readings(777), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(f.uplinks.some((u) => u.payload === readings(777))).to.equal(false);
      expect(f.rejections).to.deep.include({ reason: 'publish_denied', agentId: A });
      await legitimateTrafficFlows();
    });

    it('closes the connection of an agent publishing into another agent subtree', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(agentB);
      agentB.publish(readingsTopic(A, 'dev-a1'), readings(888), { qos: 1 });
      await closed(agentB);
      expect(f.uplinks.some((u) => u.payload === readings(888))).to.equal(false);
      expect(f.rejections).to.deep.include({ reason: 'publish_denied', agentId: B });
      await legitimateTrafficFlows();
    });

    for (const topic of ['$SYS/broker/x', `dc/v1/agents/${A}/status`, 'anything']) {
      it(`closes the connection of an agent publishing on ${topic}`, async function () {
        const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
        await connected(agentB);
        agentB.publish(topic, JSON.stringify({ state: 'offline' }), { qos: 1 });
        await closed(agentB);
        expect(f.uplinks.some((u) => u.agentId === B)).to.equal(false);
        await legitimateTrafficFlows();
      });
    }

    it('closes the connection of an agent publishing with a wildcard', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(agentB);
      agentB.publish(`dc/v1/agents/${B}/devices/+/readings`, readings(1), { qos: 1 });
      await closed(agentB);
      expect(f.rejections).to.deep.include({ reason: 'publish_denied', agentId: B });
      await legitimateTrafficFlows();
    });

    it('never echoes an agent publish on its own downlink topic back to it', async function () {
      const echoed: string[] = [];
      agentA.on('message', (topic, payload) => {
        if (payload.toString() === '{"forged":true}') echoed.push(topic);
      });
      await within(
        agentA.publishAsync(`dc/v1/agents/${A}/down/pairing`, '{"forged":true}', { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      await legitimateTrafficFlows();
      expect(echoed).to.deep.equal([]);
      expect(f.uplinks.some((u) => u.payload.includes('forged'))).to.equal(false);
    });

    it('accepts a device adopted after the agent connected once its record is refreshed', async function () {
      f.directory.adopt(A, 'dev-a3');
      await f.broker.refreshAgent(A);
      await within(
        agentA.publishAsync(readingsTopic(A, 'dev-a3'), readings(43), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(f.uplinks.some((u) => u.topic.kind === 'readings' && u.topic.deviceId === 'dev-a3')).to.equal(
        true,
      );
    });

    it('accepts a device adopted after the agent connected, re-reading the directory on the first miss', async function () {
      f.directory.adopt(A, 'dev-a2');
      await within(
        agentA.publishAsync(readingsTopic(A, 'dev-a2'), readings(42), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(f.uplinks.some((u) => u.topic.kind === 'readings' && u.topic.deviceId === 'dev-a2')).to.equal(
        true,
      );
    });
  });

  describe('packet size', function () {
    it('closes a connection that sends a packet over the limit, before handling it', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(agentB);
      const big = JSON.stringify({
        readings: [{ capability: 'environment.temperature', value: 1, pad: 'x'.repeat(MAX_PACKET_BYTES) }],
      });
      agentB.publish(readingsTopic(B, 'dev-b1'), big, { qos: 1 });
      await closed(agentB);
      expect(f.rejections).to.deep.include({ reason: 'packet_too_large', agentId: B });
      expect(f.uplinks.some((u) => u.agentId === B)).to.equal(false);
      await legitimateTrafficFlows();
    });

    it('closes a connection announcing a huge packet while its body is still arriving', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(agentB);
      agentB.publish(readingsTopic(B, 'dev-b1'), Buffer.alloc(2_000_000, 0x20), { qos: 1 });
      await closed(agentB);
      expect(f.rejections).to.deep.include({ reason: 'packet_too_large', agentId: B });
      expect(f.uplinks.some((u) => u.agentId === B)).to.equal(false);
      await legitimateTrafficFlows();
    });

    it('accepts a packet just under the limit', async function () {
      const topic = readingsTopic(A, 'dev-a1');
      const base = readings(5);
      // fixed header (1 + 2 length bytes) + topic length field (2) + topic + packet id (2) + payload
      const room = MAX_PACKET_BYTES - (3 + 2 + topic.length + 2) - base.length;
      const payload = base.slice(0, -1) + ',"pad":"' + 'x'.repeat(room - 10) + '"}';
      expect(payload.length).to.be.lessThan(MAX_PACKET_BYTES);
      await within(agentA.publishAsync(topic, payload, { qos: 1 }), WAIT_MS, 'PUBACK');
      await legitimateTrafficFlows();
    });
  });

  describe('acknowledgement and durability', function () {
    it('sends the PUBACK only after the uplink handler has finished', async function () {
      let handled = false;
      f.uplinkBehaviour = async () => {
        await sleep(300);
        handled = true;
      };
      await within(
        agentA.publishAsync(readingsTopic(A, 'dev-a1'), readings(1), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(handled, 'handler finished before the PUBACK reached the client').to.equal(true);
    });

    it('acknowledges and drops a payload the handler rejects, and keeps the connection', async function () {
      await within(
        agentA.publishAsync(readingsTopic(A, 'dev-a1'), 'not json', { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      await within(
        agentA.publishAsync(readingsTopic(A, 'dev-a1'), JSON.stringify({ readings: [] }), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(f.rejections.filter((r) => r.reason === 'payload_rejected')).to.have.length(2);
      expect(f.uplinks).to.have.length(0);
      await legitimateTrafficFlows();
    });

    it('does not acknowledge when the handler fails, so the agent redelivers after reconnecting', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B), reconnect: true });
      await connected(agentB);
      let attempts = 0;
      f.uplinkBehaviour = async (agentId) => {
        if (agentId === B && ++attempts === 1) throw new Error('event store unavailable');
      };
      await within(
        agentB.publishAsync(readingsTopic(B, 'dev-b1'), readings(99), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(attempts).to.equal(2);
      expect(f.uplinks.filter((u) => u.agentId === B && u.payload === readings(99))).to.have.length(1);
      expect(f.rejections).to.deep.include({ reason: 'uplink_failed', agentId: B });
      await legitimateTrafficFlows();
    });

    it('treats a RejectedMessage from the handler as final', async function () {
      f.uplinkBehaviour = async () => {
        throw new RejectedMessage('unknown_capability', 'no such capability');
      };
      await within(
        agentA.publishAsync(readingsTopic(A, 'dev-a1'), readings(1), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(agentA.connected).to.equal(true);
      expect(f.rejections).to.deep.include({ reason: 'payload_rejected', agentId: A });
    });
  });

  describe('PostgreSQL data errors (SQLSTATE class 22)', function () {
    const dataError = () =>
      Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });

    it('acknowledges and drops a candidate the database refuses as data, with a rejection record', async function () {
      let attempts = 0;
      f.uplinkBehaviour = async () => {
        attempts += 1;
        throw dataError();
      };
      await within(
        agentA.publishAsync(`dc/v1/agents/${A}/pairing/candidates`, '{}', { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(attempts).to.equal(1);
      expect(agentA.connected).to.equal(true);
      expect(f.rejections).to.deep.include({ reason: 'payload_rejected', agentId: A });
      expect(f.rejections).not.to.deep.include({ reason: 'uplink_failed', agentId: A });
    });

    it('does not drop readings on a data error: they share an append with other messages', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B), reconnect: true });
      await connected(agentB);
      let attempts = 0;
      f.uplinkBehaviour = async (agentId) => {
        if (agentId === B && ++attempts === 1) throw dataError();
      };
      await within(
        agentB.publishAsync(readingsTopic(B, 'dev-b1'), readings(7), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(attempts).to.equal(2);
      expect(f.rejections).to.deep.include({ reason: 'uplink_failed', agentId: B });
    });
  });

  describe('offline detection', function () {
    it('reports the agent offline when its connection drops, without routing the will', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(agentB);
      agentB.stream.destroy();
      await eventually(() => f.offline.includes(B), 'agent-b offline');
      await sleep(50);
      expect(f.uplinks.filter((u) => u.agentId === B)).to.deep.equal([]);
      await legitimateTrafficFlows();
    });

    it('reports connected agents offline when the broker shuts down, before close resolves', async function () {
      f.offlineBehaviour = () => sleep(100);
      await within(f.broker.close(), WAIT_MS, 'broker close');
      expect(f.offline).to.deep.equal([A]);
    });

    it('reports the agent offline on a clean disconnect too', async function () {
      const agentB = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(agentB);
      await within(agentB.endAsync(), WAIT_MS, 'disconnect');
      await eventually(() => f.offline.includes(B), 'agent-b offline');
    });

    it('handles a new connection of an agent only after the connection it replaced is marked offline', async function () {
      f.offlineBehaviour = () => sleep(300);
      const first = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(first);
      // Same agent again (a reconnect racing a half-open socket): MQTT closes the first connection.
      const second = f.connect({ clientId: B, certificate: await f.certificateFor(B) });
      await connected(second);
      await within(
        second.publishAsync(`dc/v1/agents/${B}/status`, JSON.stringify({ state: 'online' }), { qos: 1 }),
        WAIT_MS,
        'PUBACK',
      );
      expect(f.events.filter((e) => e.endsWith(B))).to.deep.equal([`offline ${B}`, `agentStatus ${B}`]);
    });
  });
});
