import path from 'node:path';
import { expect } from 'chai';
import type { MqttClient } from 'mqtt';
import { registerAgent } from '../../src/agents/register.js';
import { commandHistory } from '../../src/audit/commands.js';
import { createProject } from '../../src/identity/projects.js';
import { uplinkTopic } from '../../src/ingress/broker/topics.js';
import { loadOrCreateAuthority } from '../../src/ingress/pki/authority.js';
import { until } from '../support/edge-agent.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';
import { siteOf, smartPlug } from '../support/registry.js';
import { connectAsAgent, metricSample, within } from './support/broker-fixture.js';
import { deviceStreamName } from '../../src/domain/devices/decider.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import type { AgentRecord } from '../../src/ingress/broker/agent-directory.js';
import { RejectedMessage } from '../../src/ingress/rejected-message.js';
import { CommandDelivery } from '../../src/ingress/control/command-delivery.js';
import { decideSend } from '../../src/domain/control/delivery-decisions.js';
import {
  controlFolding,
  type ControlEvent,
  type DeviceControlState,
} from '../../src/domain/control/index.js';
import { decideOnStream } from '../../src/eventstore/handle-command.js';
import { agentsProjector } from '../../src/projections/agents/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { controls, type Controls } from '../support/commands.js';
import type { TestDatabase } from '../support/database.js';
import { closeEventStore, openEventStore } from '../support/event-store.js';

describe('command acks at the ingress (before the PUBACK), against real PostgreSQL', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let delivery: CommandDelivery;
  let c: Controls;
  let deviceId: string;
  let agent: AgentRecord;

  before(async () => {
    ({ db, store } = await openEventStore());
    delivery = new CommandDelivery({
      store,
      pool: db.pool,
      logger: createLogger('silent'),
      now: () => new Date(),
    });
    deviceId = await smartPlug(store, { projectId: 'prj_acks', siteId: 'site_1', parentHubId: 'dev_hub' });
    agent = {
      agentId: 'agt_1',
      projectId: 'prj_acks',
      hubId: 'dev_hub',
      revoked: false,
      deviceIds: new Set(['dev_hub', deviceId]),
    };
    c = controls(store, { projectId: 'prj_acks' });
    await c.grant(deviceId, 'binary.switch');
    // An ack for a device missing from the connection's record is checked against the agents read model.
    await catchUpProjector(db.pool, store, agentsProjector());
  });
  after(async () => {
    await closeEventStore({ db, store });
  });

  async function rejection(work: Promise<unknown>): Promise<RejectedMessage> {
    const error = await work.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(RejectedMessage);
    return error as RejectedMessage;
  }

  /** Records the command as sent to `agentId`, as the ingress does before it publishes. */
  const sendTo = (commandId: string, agentId: string) =>
    decideOnStream(store, deviceStreamName(deviceId), controlFolding, (state: DeviceControlState) => ({
      events: decideSend(state, commandId, 'accepted', { agentId, now: new Date() }).events as ControlEvent[],
      result: undefined,
    }));

  it('records the outcome once: a redelivered ack appends nothing', async () => {
    const commandId = await c.command(deviceId, {
      capability: 'binary.switch',
      value: true,
      mode: 'imperative',
    });
    await sendTo(commandId, agent.agentId);
    await delivery.ack(agent, commandId, { deviceId, status: 'applied' });
    const length = (await store.readStream(deviceStreamName(deviceId))).length;
    await delivery.ack(agent, commandId, { deviceId, status: 'applied' });
    expect((await store.readStream(deviceStreamName(deviceId))).length).to.equal(length);
    expect(await c.status(deviceId, commandId)).to.equal('succeeded');
  });

  it("drops an ack for a device that is not the agent's, and one for a command the device does not have", async () => {
    const commandId = await c.command(deviceId, {
      capability: 'binary.switch',
      value: false,
      mode: 'imperative',
    });
    const stranger = { ...agent, deviceIds: new Set(['dev_hub']) };
    expect(
      (await rejection(delivery.ack(stranger, commandId, { deviceId, status: 'applied' }))).reason,
    ).to.equal('foreign_device');
    expect(
      (await rejection(delivery.ack(agent, 'cmd_unknown', { deviceId, status: 'applied' }))).reason,
    ).to.equal('unknown_command');
    expect(
      (await rejection(delivery.ack(agent, commandId, { deviceId, status: 'applied' }))).reason,
      'never sent',
    ).to.equal('not_sent_to_agent');
    await sendTo(commandId, 'agt_other');
    expect(
      (await rejection(delivery.ack(agent, commandId, { deviceId, status: 'applied' }))).reason,
      'sent to another agent',
    ).to.equal('not_sent_to_agent');
    expect(await c.status(deviceId, commandId)).to.equal('sent');
  });
});

describe('command acks over the real broker (mTLS, a real MQTT client as the agent)', function () {
  this.timeout(120_000);
  // A small ack quota keeps the burst case short; its bounds are lower bounds on time.
  const RATE = 20;
  const BURST = 10;
  const METRICS_TOKEN = 'a'.repeat(40);
  let edge: EdgeService;
  let projectId: string;
  let first: Agent;
  let second: Agent;
  let plug: string;
  let c: Controls;
  const clients: MqttClient[] = [];

  interface Agent {
    readonly agentId: string;
    readonly hubId: string;
    readonly client: MqttClient;
  }

  before(async () => {
    edge = await startEdgeService({
      settings: {
        COMMAND_ACKS_QUOTA_PER_SECOND: String(RATE),
        COMMAND_ACKS_QUOTA_BURST: String(BURST),
        METRICS_TOKEN,
      },
    });
    projectId = (await createProject(edge.store, { name: 'acks' })).projectId;
    const siteId = await siteOf(edge, projectId);
    const authority = await loadOrCreateAuthority(path.join(edge.dataDir, 'pki'));
    const registered = [
      await registerAgent(edge.store, authority, { projectId, siteId }),
      await registerAgent(edge.store, authority, { projectId, siteId }),
    ];
    plug = await smartPlug(edge.store, { projectId, siteId, parentHubId: registered[0]!.hubId });
    c = controls(edge.store, { projectId });
    await c.grant(plug, 'binary.switch');
    await edge.catchUp();
    const agents = await Promise.all(
      registered.map(async (agent) => {
        const client = await connectAsAgent(edge.mqttPort, authority.certificatePem, agent);
        clients.push(client);
        return { agentId: agent.agentId, hubId: agent.hubId, client };
      }),
    );
    [first, second] = [agents[0]!, agents[1]!];
  });
  after(async () => {
    await Promise.all(clients.map((client) => client.endAsync(true).catch(() => undefined)));
    await edge?.close();
  });

  /** Publishes an ack at QoS 1; resolves at its PUBACK (the ack has been handled by then). */
  function publishAck(agent: Agent, commandId: string, payload: Record<string, unknown>): Promise<number> {
    return new Promise((resolve, reject) => {
      agent.client.publish(
        uplinkTopic.commandAck(agent.agentId, commandId),
        JSON.stringify(payload),
        { qos: 1 },
        (error) => (error ? reject(error) : resolve(performance.now())),
      );
    });
  }

  const streamLength = async () => (await edge.store.readStream(deviceStreamName(plug))).length;

  const metric = (series: string) => metricSample(edge.baseUrl, METRICS_TOKEN, series);
  const dropped = (reason: string) => metric(`devcloud_command_acks_dropped_total{reason="${reason}"}`);

  let commandId: string;

  it('drops a forged ack for a command never sent (agent not online, attempt 0): still queued, nothing appended', async () => {
    commandId = await c.command(plug, { capability: 'binary.switch', value: true, mode: 'imperative' });
    // The agent is connected but has not reported online: nothing is sent to it.
    expect(await c.status(plug, commandId)).to.equal('queued');
    const length = await streamLength();
    const droppedBefore = await dropped('not_sent_to_agent');

    // The PUBACK comes after the handler has run (docs/mqtt.md §5): the ack has been dealt with.
    await publishAck(first, commandId, { deviceId: plug, status: 'applied', detail: 'forged' });

    expect(await c.status(plug, commandId)).to.equal('queued');
    expect(await streamLength()).to.equal(length);
    expect(await dropped('not_sent_to_agent'), 'counted as dropped').to.equal(droppedBefore + 1);
  });

  it('sends the command once the agent is online; an ack from another agent, or with control characters, is dropped; the real ack succeeds, by agent:<id>', async () => {
    const apply = new Promise<Record<string, unknown>>((resolve) => {
      first.client.on('message', (_topic, payload) => {
        const message = JSON.parse(payload.toString('utf8')) as Record<string, unknown>;
        if (message.action === 'apply' && message.commandId === commandId) resolve(message);
      });
    });
    await first.client.subscribeAsync(`dc/v1/agents/${first.agentId}/down/#`, { qos: 1 });
    await publishStatus(first, 'online');
    expect(await within(apply, 20_000, 'the apply')).to.include({ deviceId: plug, attempt: 1 });
    await until('the send recorded', async () =>
      (await c.status(plug, commandId)) === 'sent' ? true : undefined,
    );
    const length = await streamLength();

    const foreign = await dropped('foreign_device');
    await publishAck(second, commandId, { deviceId: plug, status: 'failed', detail: 'not mine' });
    expect(await dropped('foreign_device'), 'the other agent was heard').to.equal(foreign + 1);

    const rejected = await metric('devcloud_mqtt_rejected_total{reason="payload_rejected"}');
    await publishAck(first, commandId, {
      deviceId: plug,
      status: 'failed',
      detail: 'ok\n\u001b[1A\u001b[2K',
    });
    expect(await metric('devcloud_mqtt_rejected_total{reason="payload_rejected"}')).to.equal(rejected + 1);
    expect(await c.status(plug, commandId)).to.equal('sent');
    expect(await streamLength()).to.equal(length);

    await publishAck(first, commandId, { deviceId: plug, status: 'applied', detail: 'switched on' });
    expect(await c.status(plug, commandId)).to.equal('succeeded');
    const steps = await commandHistory(edge.store, { deviceId: plug });
    expect(steps.filter((s) => s.commandId === commandId).map((s) => [s.step, s.by, s.detail])).to.deep.equal(
      [
        ['accepted', 'client:cli_test', 'ttl 60s'],
        ['sent', 'system', `attempt 1 to ${first.agentId}`],
        ['succeeded', `agent:${first.agentId}`, 'switched on'],
      ],
    );
  });

  it('refuses a pairing candidate whose reported names hold control characters (acknowledged and dropped)', async () => {
    const rejected = await metric('devcloud_mqtt_rejected_total{reason="payload_rejected"}');
    const candidate = {
      sessionId: 'ps_none',
      ieeeAddr: '0x00124b0018e2a1b2',
      manufacturer: 'IKEA\r\n\u001b[2K',
      model: 'TRADFRI \u202ebulb',
      capabilities: ['binary.switch'],
    };
    await new Promise<void>((resolve, reject) =>
      first.client.publish(
        uplinkTopic.pairingCandidate(first.agentId),
        JSON.stringify(candidate),
        { qos: 1 },
        (error) => (error ? reject(error) : resolve()),
      ),
    );
    // Refused as a bad payload, not merely ignored for want of an open pairing window.
    expect(await metric('devcloud_mqtt_rejected_total{reason="payload_rejected"}')).to.equal(rejected + 1);
  });

  it('holds a burst of acks beyond the quota back (PUBACKs delayed to the quota), appending nothing for them', async () => {
    const length = await streamLength();
    const overQuota = await metric('devcloud_command_acks_over_quota_total');
    const messages = 40;
    const start = performance.now();
    const acks = await within(
      Promise.all(
        Array.from({ length: messages }, (_, i) =>
          publishAck(first, `cmd_forged_${i}`, { deviceId: plug, status: 'applied', detail: `forged ${i}` }),
        ),
      ),
      30_000,
      'the PUBACKs',
    );
    const sorted = acks.map((t) => t - start).sort((a, b) => a - b);
    const early = sorted
      .map((at, i) => ({ k: i + 1, at, earliest: ((i + 1 - BURST) / RATE) * 1000 - 50 }))
      .filter(({ at, earliest }) => at < earliest);
    expect(early, 'PUBACKs faster than the quota').to.deep.equal([]);
    expect(await metric('devcloud_command_acks_over_quota_total')).to.be.at.least(
      overQuota + messages - BURST,
    );
    expect(await streamLength()).to.equal(length);
  });

  function publishStatus(agent: Agent, state: 'online' | 'offline'): Promise<void> {
    return new Promise((resolve, reject) => {
      agent.client.publish(
        uplinkTopic.agentStatus(agent.agentId),
        JSON.stringify({ state }),
        { qos: 1 },
        (e) => (e ? reject(e) : resolve()),
      );
    });
  }
});
