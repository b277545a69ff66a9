import { expect } from 'chai';
import { deviceStreamName } from '../../src/domain/devices/decider.js';
import type { PostgresEventStore } from '../../src/eventstore/postgres/adapter.js';
import { createLogger } from '../../src/infra/logger.js';
import type { AgentRecord } from '../../src/ingress/broker/agent-directory.js';
import { RejectedMessage } from '../../src/ingress/broker/rejected-message.js';
import { CommandDelivery } from '../../src/ingress/commands/delivery.js';
import { agentsProjector } from '../../src/projections/agents/projector.js';
import { catchUpProjector } from '../../src/projections/catch-up.js';
import { registerDevice } from '../../src/registry/devices.js';
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
    ({ deviceId } = await registerDevice(store, {
      projectId: 'prj_acks',
      siteId: 'site_1',
      parentHubId: 'dev_hub',
      kind: 'device',
      manufacturer: 'IKEA of Sweden',
      productModel: 'INSPELNING Smart plug',
      capabilities: ['binary.switch'],
      profile: 'draft',
    }));
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

  it('records the outcome once: a redelivered ack appends nothing', async () => {
    const commandId = await c.command(deviceId, {
      capability: 'binary.switch',
      value: true,
      mode: 'imperative',
    });
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
    expect(await c.status(deviceId, commandId)).to.equal('queued');
  });
});
