import { once } from 'node:events';
import { expect } from 'chai';
import { findCapability } from '../../src/domain/catalogue/index.js';
import { connectedAgent, until } from '../support/edge-agent.js';
import { edgeServiceForSuite } from '../support/edge-service.js';
import { call } from '../support/registry.js';

interface Candidate {
  ieeeAddr: string;
  state: string;
  capabilities: string[];
}

describe('edge path end to end: agent create -> edge-sim -> pairing -> readings in the state endpoint', () => {
  const suite = edgeServiceForSuite();

  it('adopts one candidate and rejects another; the adopted device reports through its public id', async () => {
    const { edge } = suite;
    const agent = await connectedAgent(edge, {
      timezone: 'Europe/Paris',
      sim: { devices: 4, rate: 6, seed: 42, backoff: { initialMs: 100, maxMs: 1000 } },
    });
    const { token, hubId } = agent;
    const sim = suite.stopAfter(agent.sim);

    const opened = await call(edge, 'POST', '/v1/pairing/sessions', { token, body: { hubId } });
    expect(opened.status).to.equal(201);
    const { sessionId } = (opened.body as { session: { sessionId: string } }).session;
    const candidates = await until('four candidates', async () => {
      const answer = await call(edge, 'GET', `/v1/pairing/sessions/${sessionId}`, { token });
      const list = (answer.body as { session: { candidates: Candidate[] } }).session.candidates;
      return list.length === 4 ? list : undefined;
    });
    const fleet = sim.fleet();
    expect(candidates.map((c) => c.ieeeAddr).sort()).to.deep.equal(fleet.map((d) => d.ieeeAddr).sort());
    expect(candidates.every((c) => c.state === 'pending')).to.equal(true);

    const plug = fleet.find((d) => d.capabilities.includes('binary.switch'))!;
    const other = fleet.find((d) => d !== plug)!;
    const told = once(sim, 'adopted');
    const adopted = await call(edge, 'POST', `/v1/pairing/sessions/${sessionId}/adopt`, {
      token,
      body: { ieeeAddr: plug.ieeeAddr },
    });
    expect(adopted.status).to.equal(201);
    const { device, write_blocked } = adopted.body as { device: { id: string }; write_blocked: string[] };
    expect(write_blocked).to.deep.equal(plug.capabilities.filter((c) => findCapability(c)?.writable));
    const [{ publicId }] = (await told) as [{ publicId: string }];
    expect(publicId).to.equal(device.id);

    const refusedTold = once(sim, 'rejected');
    const rejected = await call(edge, 'POST', `/v1/pairing/sessions/${sessionId}/reject`, {
      token,
      body: { ieeeAddr: other.ieeeAddr },
    });
    expect(rejected.status).to.equal(200);
    await refusedTold;

    const state = await until('readings in the state endpoint', async () => {
      const answer = await call(edge, 'GET', `/v1/devices/${device.id}/state`, { token });
      const body = answer.body as { connectivity: string; state: { capability: string; unit: string }[] };
      return answer.status === 200 && body.state.length >= 3 ? body : undefined;
    });
    expect(state.connectivity).to.equal('online');
    for (const entry of state.state) {
      expect(plug.capabilities).to.include(entry.capability);
      expect(entry.unit).to.equal(findCapability(entry.capability)!.unit);
    }
    const hub = (await call(edge, 'GET', `/v1/devices/${hubId as string}/state`, { token })).body as {
      connectivity: string;
    };
    expect(hub.connectivity).to.equal('online');

    // Closing the window tells the agent to stop permitting joins.
    const stopped = once(sim, 'stop');
    expect((await call(edge, 'DELETE', `/v1/pairing/sessions/${sessionId}`, { token })).status).to.equal(200);
    await stopped;

    // The rejected device does not join the next window; the undecided ones do.
    const next = await call(edge, 'POST', '/v1/pairing/sessions', { token, body: { hubId } });
    const nextId = (next.body as { session: { sessionId: string } }).session.sessionId;
    const rejoined = await until('the undecided candidates', async () => {
      const answer = await call(edge, 'GET', `/v1/pairing/sessions/${nextId}`, { token });
      const list = (answer.body as { session: { candidates: Candidate[] } }).session.candidates;
      return list.length === 2 ? list : undefined;
    });
    expect(rejoined.map((c) => c.ieeeAddr)).not.to.include(other.ieeeAddr);
    expect(rejoined.map((c) => c.ieeeAddr)).not.to.include(plug.ieeeAddr);
  });
});
