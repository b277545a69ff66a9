import { once } from 'node:events';
import { expect } from 'chai';
import type { ApplyCommand, CommandDown } from '../../src/edge-sim/commands.js';
import { deviceStreamName } from '../../src/domain/devices/decider.js';
import { connectedAgent, until } from '../support/edge-agent.js';
import { edgeServiceForSuite } from '../support/edge-service.js';
import { call } from '../support/registry.js';

interface Command {
  commandId: string;
  status: string;
  attempts: number;
}

/**
 * The whole control plane through the public API, the real mTLS broker and the reference agent: pairing,
 * adoption, refusal with reasons, profile verification (the operator CLI), grant, a command delivered and
 * applied with its steps and the new state observed, then a revoke that cancels a pending setpoint (told
 * to the agent) and refuses the next command.
 */
describe('control plane end to end: pairing -> grant -> command -> agent -> state -> revoke', function () {
  this.timeout(180_000);
  const suite = edgeServiceForSuite();

  it('walks the whole path', async () => {
    const { edge } = suite;
    const agent = await connectedAgent(edge, {
      timezone: 'Europe/Vienna',
      // Device 2 of the fleet is a relay module: actuator.relay is S2 (grant on a verified profile, confirm).
      sim: { devices: 3, rate: 0.3, seed: 11, backoff: { initialMs: 100, maxMs: 1000 } },
      scopes: ['devices:read', 'devices:write', 'commands:write', 'commands:read', 'grants:admin'],
    });
    const { token, hubId } = agent;
    const sim = suite.stopAfter(agent.sim);
    const api = (method: string, path: string, body?: unknown) => call(edge, method, path, { token, body });

    // A pairing window; the simulated devices join it; the relay module is adopted.
    const opened = await api('POST', '/v1/pairing/sessions', { hubId });
    expect(opened.status).to.equal(201);
    const { sessionId } = (opened.body as { session: { sessionId: string } }).session;
    const relay = sim.fleet().find((d) => d.capabilities.includes('actuator.relay'))!;
    await until('the relay module among the candidates', async () => {
      const answer = await api('GET', `/v1/pairing/sessions/${sessionId}`);
      const { candidates } = (answer.body as { session: { candidates: { ieeeAddr: string }[] } }).session;
      return candidates.some((c) => c.ieeeAddr === relay.ieeeAddr) ? true : undefined;
    });
    const told = once(sim, 'adopted');
    const adopted = await api('POST', `/v1/pairing/sessions/${sessionId}/adopt`, {
      ieeeAddr: relay.ieeeAddr,
    });
    expect(adopted.status).to.equal(201);
    const { device, write_blocked } = adopted.body as { device: { id: string }; write_blocked: string[] };
    expect(write_blocked).to.deep.equal(['actuator.relay']);
    await told;
    const deviceId = device.id;
    const commands = `/v1/devices/${deviceId}/commands`;
    const relayOn = { capabilityKey: 'actuator.relay', value: true, mode: 'imperative', ttlSeconds: 60 };

    // Adoption grants no control: refused, with every failing reason.
    const refused = await api('POST', commands, relayOn);
    expect(refused.status).to.equal(403);
    expect((refused.body as { reasons: string[] }).reasons).to.include.members([
      'grant_missing',
      'confirm_required',
    ]);

    // S2 on a draft profile cannot be armed; the operator verifies it; then the grant is enabled.
    const grants = `/v1/devices/${deviceId}/capability-grants`;
    expect((await api('PUT', grants, { capabilityKey: 'actuator.relay', write: true })).status).to.equal(409);
    await edge.cli('device', 'profile', deviceId, 'verified', '--reason', 'bench tested');
    const enabled = await api('PUT', grants, { capabilityKey: 'actuator.relay', write: true });
    expect(enabled.status).to.equal(200);

    // Accepted, delivered, applied; its steps and the new state observed.
    const before = new Date().toISOString();
    const applied = new Promise<ApplyCommand>((resolve) => sim!.once('applied', resolve));
    const accepted = await api('POST', commands, { ...relayOn, confirm: true });
    expect(accepted.status).to.equal(201);
    const { commandId } = (accepted.body as { command: Command }).command;
    expect(await applied).to.include({ commandId, deviceId, capability: 'actuator.relay', value: true });
    const done = await until('the command succeeded', async () => {
      const answer = await api('GET', `/v1/commands/${commandId}`);
      // The commands read model follows the event store: a 404 until the acceptance is projected.
      const command = (answer.body as { command?: Command }).command;
      return command?.status === 'succeeded' ? command : undefined;
    });
    expect(done.attempts).to.equal(1);
    const steps = (await edge.store.readStream(deviceStreamName(deviceId)))
      .filter((e) => (e.data as { commandId?: string }).commandId === commandId)
      .map((e) => e.type);
    expect(steps).to.deep.equal(['CommandAccepted', 'CommandSent', 'CommandSucceeded']);
    const state = await until('the relay on in the state endpoint', async () => {
      const answer = await api('GET', `/v1/devices/${deviceId}/state`);
      const entries = (
        answer.body as { state?: { capability: string; value: unknown; serverTime: string }[] }
      ).state;
      return entries?.find((s) => s.capability === 'actuator.relay' && s.serverTime >= before);
    });
    expect(state.value).to.equal(true);

    // A setpoint the device has not applied yet is pending when the grant is revoked.
    sim.commandBehaviour = { applyDelayMs: 60_000 };
    const pendingSent = new Promise<ApplyCommand>((resolve) => sim!.once('command', resolve));
    const setpoint = await api('POST', commands, {
      ...relayOn,
      value: false,
      mode: 'desired',
      confirm: true,
    });
    expect(setpoint.status).to.equal(201);
    const pendingId = (setpoint.body as { command: Command }).command.commandId;
    expect((await pendingSent).commandId).to.equal(pendingId);
    const dropped = new Promise<CommandDown>((resolve) => sim!.once('dropped', resolve));
    expect((await api('PUT', grants, { capabilityKey: 'actuator.relay', write: false })).status).to.equal(
      200,
    );
    expect(await dropped).to.include({ commandId: pendingId, action: 'cancel', outcome: 'cancelled' });
    const cancelled = await until('the setpoint cancelled', async () => {
      const answer = await api('GET', `/v1/commands/${pendingId}`);
      const command = (answer.body as { command?: Command }).command;
      return command?.status === 'cancelled' ? command : undefined;
    });
    expect(cancelled.status).to.equal('cancelled');

    // The next command is refused.
    const after = await api('POST', commands, { ...relayOn, confirm: true });
    expect(after.status).to.equal(403);
    expect((after.body as { reasons: string[] }).reasons).to.deep.equal(['grant_missing']);
  });
});
