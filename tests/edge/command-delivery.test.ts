import { once } from 'node:events';
import { expect } from 'chai';
import { readAgentFiles } from '../../src/agents/agent-files.js';
import type { ApplyCommand, CommandDown } from '../../src/edge-sim/commands.js';
import { EdgeSim } from '../../src/edge-sim/index.js';
import { controls, type Controls } from '../support/commands.js';
import { adoptedDeviceWith, connectedAgent, until } from '../support/edge-agent.js';
import { startEdgeService, type EdgeService } from '../support/edge-service.js';
import { call } from '../support/registry.js';

const SEED = 7;
const DEVICES = 2; // device 0 a weather sensor, device 1 a smart plug (binary.switch, S1)

/**
 * Resolves with the first `event` of the simulator that matches, or fails after `ms`. The bound allows for
 * a 2-core CI machine running the other test leg beside this one, where 30 s was once not enough for the
 * file's first command.
 */
function simEvent<T extends CommandDown>(
  sim: EdgeSim,
  event: string,
  match: (message: T) => boolean,
  ms = 90_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      sim.off(event, listener);
      reject(new Error(`timed out waiting for the simulator's ${event}`));
    }, ms);
    const listener = (message: T) => {
      if (!match(message)) return;
      clearTimeout(timer);
      sim.off(event, listener);
      resolve(message);
    };
    sim.on(event, listener);
  });
}

describe('command delivery over the real broker (mTLS) and the simulator', function () {
  this.timeout(120_000);
  let edge: EdgeService;
  let sim: EdgeSim;
  let dir: string;
  let token: string;
  let plug: string;
  let c: Controls;
  /** Added to the server clock of the ingress (TTL decisions); the scheduler keeps real time. */
  let skewMs = 0;
  /** Every `apply` each simulator instance received, in order. */
  let received: ApplyCommand[] = [];

  const startSim = async (listen: (next: EdgeSim) => void = () => {}) => {
    received = [];
    const next = new EdgeSim({
      files: await readAgentFiles(dir),
      devices: DEVICES,
      rate: 0.3,
      seed: SEED,
      backoff: { initialMs: 100, maxMs: 1000 },
    });
    next.on('command', (message: ApplyCommand) => received.push(message));
    listen(next);
    const connected = once(next, 'connected');
    next.start();
    await connected;
    sim = next;
  };
  const statusIs = (commandId: string, status: string) =>
    until(`${commandId} ${status}`, async () =>
      (await c.status(plug, commandId)) === status ? true : undefined,
    );
  const types = async (commandId: string) => (await c.commandEvents(plug, commandId)).map((e) => e.type);
  /** The simulator received the command; a timeout says what the store recorded for it, to tell why. */
  const receivedBySim = (commandId: string) => {
    // It may have arrived while the test awaited something else: the simulator's events are not replayed.
    const already = received.find((m) => m.commandId === commandId);
    if (already) return Promise.resolve(already);
    return simEvent<ApplyCommand>(sim, 'command', (m) => m.commandId === commandId).catch(whyNot(commandId));
  };
  /** Turns a timeout about a command into one that says what the store recorded and the simulator got. */
  const whyNot = (commandId: string) => async (error: Error) => {
    const recorded = await types(commandId).catch((e: unknown) => [`(unreadable: ${String(e)})`]);
    const got = received.map((m) => m.commandId).join(', ') || 'nothing';
    throw new Error(`${error.message} ${commandId}; recorded: ${recorded.join(', ')}; it received: ${got}`);
  };

  before(async () => {
    edge = await startEdgeService({ now: () => Date.now() + skewMs });
    const agent = await connectedAgent(edge, {
      timezone: 'Europe/Berlin',
      sim: { devices: DEVICES, rate: 0.3, seed: SEED, backoff: { initialMs: 100, maxMs: 1000 } },
    });
    ({ sim, dir, token } = agent);
    sim.on('command', (message: ApplyCommand) => received.push(message));
    const { projectId } = agent.tenant;
    plug = await adoptedDeviceWith(edge, agent, { seed: SEED, devices: DEVICES }, 'binary.switch');
    c = controls(edge.store, { projectId });
    await c.grant(plug, 'binary.switch');
  });
  afterEach(() => {
    skewMs = 0;
    sim.commandBehaviour = {};
  });
  after(async () => {
    await sim?.stop(1000);
    await edge?.close();
  });

  it('an accepted command is sent once, applied, acknowledged, and the new state is in the state endpoint', async () => {
    const before = new Date().toISOString();
    let commandId = '';
    const applied = simEvent<ApplyCommand>(sim, 'applied', (m) => m.value === false).catch((error: Error) =>
      whyNot(commandId)(error),
    );
    commandId = await c.command(plug, {
      capability: 'binary.switch',
      value: false,
      mode: 'imperative',
    });
    expect(await applied).to.deep.include({ commandId, deviceId: plug, attempt: 1, mode: 'imperative' });
    await statusIs(commandId, 'succeeded');
    expect(await types(commandId)).to.deep.equal(['CommandAccepted', 'CommandSent', 'CommandSucceeded']);

    const entry = await until('the commanded value in the state endpoint', async () => {
      const answer = await call(edge, 'GET', `/v1/devices/${plug}/state`, { token });
      const state = (answer.body as { state?: { capability: string; value: unknown; serverTime: string }[] })
        .state;
      return state?.find((s) => s.capability === 'binary.switch' && s.serverTime >= before);
    });
    expect(entry.value).to.equal(false);
  });

  it('a command the device fails is recorded failed with the agent as the reason and its detail', async () => {
    sim.commandBehaviour = { failCapabilities: ['binary.switch'] };
    const commandId = await c.command(plug, { capability: 'binary.switch', value: true, mode: 'imperative' });
    await statusIs(commandId, 'failed');
    const failed = (await c.commandEvents(plug, commandId)).find((e) => e.type === 'CommandFailed')!;
    expect(failed.data).to.include({ reason: 'agent_reported', detail: 'simulated failure' });
  });

  it('an ack that arrives after the TTL (server clock) is recorded as ignored; the command stays expired', async () => {
    sim.commandBehaviour = { ackDelayMs: 1500 };
    const commandId = await c.command(plug, {
      capability: 'binary.switch',
      value: true,
      mode: 'imperative',
      ttlSeconds: 60,
    });
    await simEvent<ApplyCommand>(sim, 'applied', (m) => m.commandId === commandId);
    // The device acted, its ack is on the way: the server's clock passes the TTL first.
    skewMs = 61_000;
    await statusIs(commandId, 'expired');
    await until('the late ack recorded', async () =>
      (await types(commandId)).includes('CommandAckIgnored') ? true : undefined,
    );
    const events = await c.commandEvents(plug, commandId);
    expect(events.map((e) => e.type)).to.deep.equal([
      'CommandAccepted',
      'CommandSent',
      'CommandExpired',
      'CommandAckIgnored',
    ]);
    expect(events[3]!.data).to.include({ ackStatus: 'applied', outcome: 'expired' });
  });

  it('a superseded and a cancelled (grant revoked) command are told to the agent, which drops them unapplied', async () => {
    sim.commandBehaviour = { applyDelayMs: 60_000 };
    const first = await c.command(plug, { capability: 'binary.switch', value: true, mode: 'desired' });
    await receivedBySim(first);
    const droppedFirst = simEvent(sim, 'dropped', (m) => m.commandId === first);
    const second = await c.command(plug, { capability: 'binary.switch', value: false, mode: 'desired' });
    // Listening from now: the new command may reach the simulator before the old one's cancel does.
    const secondReceived = receivedBySim(second);
    expect(await droppedFirst).to.include({ action: 'cancel', outcome: 'superseded' });
    await secondReceived;

    const droppedSecond = simEvent(sim, 'dropped', (m) => m.commandId === second);
    await c.grant(plug, 'binary.switch', false);
    expect(await droppedSecond).to.include({ action: 'cancel', outcome: 'cancelled' });
    expect(await c.status(plug, first)).to.equal('superseded');
    expect(await c.status(plug, second)).to.equal('cancelled');
    await c.grant(plug, 'binary.switch');
  });

  it('on reconnect a desired command is sent again (attempt 2), an imperative one never; one queued while away is sent once', async () => {
    sim.commandBehaviour = { applyDelayMs: 60_000 }; // nothing is acknowledged before the agent goes
    const imperative = await c.command(plug, {
      capability: 'binary.switch',
      value: true,
      mode: 'imperative',
    });
    await receivedBySim(imperative);
    const desired = await c.command(plug, { capability: 'binary.switch', value: true, mode: 'desired' });
    await receivedBySim(desired);
    await sim.stop(5000);

    const whileAway = await c.command(plug, {
      capability: 'binary.switch',
      value: false,
      mode: 'imperative',
    });
    expect(await c.status(plug, whileAway)).to.equal('queued');
    await startSim();
    await statusIs(whileAway, 'succeeded');
    await statusIs(desired, 'succeeded');

    expect(received.map((m) => [m.commandId, m.attempt])).to.deep.equal([
      [desired, 2],
      [whileAway, 1],
    ]);
    expect(await types(imperative)).to.deep.equal(['CommandAccepted', 'CommandSent']);
    expect(await c.status(plug, imperative)).to.equal('sent');
  });

  it('a command whose TTL ends while its agent is away is expired, never sent, and the agent is told', async () => {
    await sim.stop(5000);
    const commandId = await c.command(plug, {
      capability: 'binary.switch',
      value: true,
      mode: 'desired',
      ttlSeconds: 60,
    });
    // Past the TTL for the ingress only: the scheduler keeps real time, so it cannot expire the command first
    // however long the agent takes to come back (with a short TTL it could, on a loaded machine, and then
    // nothing would be left to tell the agent).
    skewMs = 61_000;
    let told: Promise<CommandDown> | undefined;
    await startSim((next) => {
      told = simEvent(next, 'cancel', (m) => m.commandId === commandId);
    });
    await statusIs(commandId, 'expired');
    expect(await told).to.include({ action: 'cancel', outcome: 'expired' });
    expect(await types(commandId)).to.deep.equal(['CommandAccepted', 'CommandExpired']);
    expect(received.map((m) => m.commandId)).to.not.include(commandId);
  });
});
