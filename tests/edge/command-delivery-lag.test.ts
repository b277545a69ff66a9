import { expect } from 'chai';
import pg from 'pg';
import sinon from 'sinon';
import type { ApplyCommand } from '../../src/edge-sim/commands.js';
import { EdgeSim } from '../../src/edge-sim/index.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { connectivityStreamName } from '../../src/ingress/connectivity.js';
import { pairingStreamName } from '../../src/domain/pairing/index.js';
import { closePairingWindow } from '../../src/pairing/windows.js';
import { agentsProjector } from '../../src/projections/agents/projector.js';
import { AGENT_ID_OF_DEVICE } from '../../src/projections/agents/queries.js';
import { catchUpProjector, isCaughtUp } from '../../src/projections/catch-up.js';
import { pairingProjector } from '../../src/projections/pairing/projector.js';
import { ADOPTED_ON_HUB } from '../../src/projections/pairing/queries.js';
import { smartPlug } from '../support/registry.js';
import { allProjectors } from '../../src/runtime/projectors.js';
import { provisionSimulatedAgent } from '../../tools/soak/provision.js';
import { controls } from '../support/commands.js';
import { until } from '../support/edge-agent.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';

interface QueryRecord {
  readonly step: 'sent' | 'answered';
  readonly text: string;
  readonly firstValue: unknown;
  readonly rowCount?: number;
}

/**
 * Every statement this process sends, and when its answer came, in order: the service runs in this process,
 * so this shows what the ingress looked up and when, without changing what it does.
 */
function recordQueries(): QueryRecord[] {
  const records: QueryRecord[] = [];
  const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  sinon.stub(pg.Client.prototype, 'query').callsFake(function (this: pg.Client, ...args: unknown[]) {
    const result = original.apply(this, args);
    const first = args[0] as string | { text?: string; values?: unknown[] };
    const text = typeof first === 'string' ? first : (first?.text ?? '');
    const values = (typeof first === 'string' ? args[1] : first?.values) as unknown[] | undefined;
    records.push({ step: 'sent', text, firstValue: values?.[0] });
    if (result instanceof Promise) {
      void result.then(
        (answer: pg.QueryResult) =>
          records.push({ step: 'answered', text, firstValue: values?.[0], rowCount: answer?.rowCount ?? 0 }),
        () => undefined,
      );
    }
    return result;
  });
  return records;
}

/** Where `statement` (one of the ingress's, as sent) with first parameter `value` was sent or answered. */
const at = (records: QueryRecord[], step: QueryRecord['step'], statement: string, value: string) =>
  records.findIndex((r) => r.step === step && r.text === statement && r.firstValue === value);

/** A switchable device behind the hub, registered in the store only: no read model shows it yet. */
async function switchBehind(store: EventStore, projectId: string, hubId: string): Promise<string> {
  return smartPlug(store, { projectId, siteId: 'site_lag', parentHubId: hubId });
}

describe('command delivery while read models lag (ingress only, projected by the test)', function () {
  this.timeout(120_000);
  let edge: EdgeService | undefined;
  let sim: EdgeSim | undefined;
  let received: ApplyCommand[] = [];
  afterEach(async () => {
    sinon.restore();
    try {
      await sim?.stop(0);
    } finally {
      await edge?.close();
      sim = undefined;
      edge = undefined;
    }
  });

  /** The ingress alone, so nothing projects unless the test does; its agent provisioned with no device. */
  async function ingressWithAgent() {
    edge = await startEdgeService({ roles: ['ingress'] });
    const { projectId, hubId, files } = await provisionSimulatedAgent(edge.store, {
      dataDir: edge.dataDir,
      brokerUrl: `mqtts://127.0.0.1:${edge.mqttPort}`,
      seed: 31,
      devices: 0,
    });
    return { db: edge.db, store: edge.store, projectId, hubId, files };
  }

  async function connect(
    files: ConstructorParameters<typeof EdgeSim>[0]['files'],
    store: EventStore,
    hubId: string,
  ) {
    received = [];
    sim = new EdgeSim({ files, devices: 0, rate: 1, seed: 31, backoff: { initialMs: 100, maxMs: 500 } });
    sim.on('command', (message: ApplyCommand) => received.push(message));
    sim.start();
    // Once its hub is recorded online, the ingress has begun the agent's resend, after which it is ready.
    await until(
      'the hub recorded online',
      async () =>
        (await store.readStream(connectivityStreamName(hubId))).some(
          (e) => (e.data as { connectivity: string }).connectivity === 'online',
        ) || undefined,
      30_000,
    );
  }

  const command = (store: EventStore, projectId: string, deviceId: string) => {
    const c = controls(store, { projectId });
    return {
      c,
      send: async () => {
        await c.grant(deviceId, 'binary.switch');
        return c.command(deviceId, { capability: 'binary.switch', value: true, mode: 'imperative' });
      },
    };
  };

  const sentOnce = async (c: ReturnType<typeof controls>, deviceId: string, commandId: string) => {
    const arrived = await until(
      'the command at the agent',
      async () => received.find((m) => m.commandId === commandId),
      30_000,
    );
    expect(arrived).to.deep.include({ commandId, deviceId, attempt: 1 });
    const types = (await c.commandEvents(deviceId, commandId)).map((e) => e.type);
    expect(types.filter((t) => t === 'CommandSent')).to.have.length(1);
    expect(received.filter((m) => m.commandId === commandId)).to.have.length(1);
    // And its ack is taken: the simulator fails a command for a device it does not simulate, which is
    // recorded as the agent's answer (not dropped as a foreign device's, which would leave it to expire).
    expect(
      await until("the agent's answer recorded", async () => {
        const status = await c.status(deviceId, commandId);
        return status === 'sent' ? undefined : status;
      }),
    ).to.equal('failed');
  };

  it('sends a command accepted before its agent was ready, for a device registered after the agent connected', async () => {
    const { db, store, projectId, hubId, files } = await ingressWithAgent();
    for (const projector of allProjectors()) await catchUpProjector(db.pool, store, projector);
    // Recorded, not projected: a device of the hub, unknown to the agent's record at connect, and the end of
    // the hub's pairing window, which holds the agent's resend (and so its readiness) until the pairing read
    // model has it.
    const deviceId = await switchBehind(store, projectId, hubId);
    const [opened] = await store.readStream(pairingStreamName(hubId));
    const { sessionId } = opened!.data as { sessionId: string };
    await closePairingWindow(store, { hubId, sessionId, reason: 'closed_by_client', now: new Date() });
    const queries = recordQueries();
    await connect(files, store, hubId);
    const pairing = pairingProjector();
    expect(await isCaughtUp(db.pool, store, pairing), 'pairing behind').to.equal(false);

    await catchUpProjector(db.pool, store, agentsProjector());
    const { c, send } = command(store, projectId, deviceId);
    const commandId = await send();
    await until(
      "the ingress looked up the device's agent",
      async () => at(queries, 'answered', AGENT_ID_OF_DEVICE, deviceId) >= 0 || undefined,
      30_000,
    );
    // The race: the lookup found the agent before the resend read the hub's decisions, so before the agent
    // was marked ready, and the command was left for the agent's coming online.
    const looked = queries[at(queries, 'answered', AGENT_ID_OF_DEVICE, deviceId)]!;
    expect(looked.rowCount, 'agent found').to.equal(1);
    const resendRead = at(queries, 'sent', ADOPTED_ON_HUB, hubId);
    expect(resendRead === -1 || resendRead > at(queries, 'answered', AGENT_ID_OF_DEVICE, deviceId)).to.equal(
      true,
    );
    expect(received, 'nothing sent while the agent was not ready').to.deep.equal([]);

    await catchUpProjector(db.pool, store, pairing);
    await sentOnce(c, deviceId, commandId);
  });

  it('sends a command accepted for a device the agents read model does not show yet, once it does', async () => {
    const { db, store, projectId, hubId, files } = await ingressWithAgent();
    const first = await switchBehind(store, projectId, hubId);
    for (const projector of allProjectors()) await catchUpProjector(db.pool, store, projector);
    await connect(files, store, hubId);
    // A command that arrives shows the agent ready: from here on only `accepted` sends.
    const { c, send } = command(store, projectId, first);
    await sentOnce(c, first, await send());

    const queries = recordQueries();
    const deviceId = await switchBehind(store, projectId, hubId);
    const commandId = await command(store, projectId, deviceId).send();
    await until(
      "the ingress looked up the device's agent",
      async () => at(queries, 'answered', AGENT_ID_OF_DEVICE, deviceId) >= 0 || undefined,
      30_000,
    );
    // The fault: the read model did not know the device when the ingress first looked its agent up.
    expect(queries[at(queries, 'answered', AGENT_ID_OF_DEVICE, deviceId)]!.rowCount).to.equal(0);

    await catchUpProjector(db.pool, store, agentsProjector());
    await sentOnce(c, deviceId, commandId);
  });
});
