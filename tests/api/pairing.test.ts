import { expect } from 'chai';
import { joinCandidate } from '../../src/pairing/candidates.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, fingerprint, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

interface Session {
  sessionId: string;
  hubId: string;
  state: string;
  closesAt: string;
  closedAt?: string;
  closeReason?: string;
  candidates: { ieeeAddr: string; state: string; deviceId: string | null }[];
}

const PLUG = '0x00124b0018e2a1b2';
const SENSOR = '0x00158d0001a2b3c4';

describe('/v1/pairing/sessions', () => {
  let api: TestApi;
  let token: string;
  let projectId: string;
  let foreignToken: string;
  let site: string;
  let hub: string;
  let foreignHub: string;

  const open = (hubId: string, body: Record<string, unknown> = {}, as = token) =>
    call(api, 'POST', '/v1/pairing/sessions', { token: as, body: { hubId, ...body } });
  const session = async (id: string) =>
    ((await call(api, 'GET', `/v1/pairing/sessions/${id}`, { token })).body as { session: Session }).session;
  const newHub = () => deviceOf(api, projectId, site, { kind: 'hub', parentHubId: null, capabilities: [] });
  /** What the ingress does when the hub's agent reports a device that joined. */
  const joins = (hubId: string, sessionId: string, ieeeAddr: string, capabilities: string[]) =>
    joinCandidate(api.store, {
      hubId,
      sessionId,
      ieeeAddr,
      manufacturer: 'IKEA of Sweden',
      productModel: 'INSPELNING Smart plug',
      capabilities,
      now: new Date(),
    });

  before(async () => {
    api = await startTestApi();
    const tenant = await createTenant(api, ['devices:read', 'devices:write']);
    token = await tenant.token();
    projectId = tenant.projectId;
    site = await siteOf(api, projectId);
    hub = await newHub();
    const foreign = await createTenant(api, ['devices:read', 'devices:write']);
    foreignToken = await foreign.token();
    foreignHub = await deviceOf(api, foreign.projectId, await siteOf(api, foreign.projectId), {
      kind: 'hub',
      parentHubId: null,
    });
  });
  after(() => api.close());

  it('two concurrent opens on one hub: one 201, one 409 carrying the first session id', async () => {
    const target = await newHub();
    const answers = await Promise.all([open(target), open(target)]);
    const created = answers.filter((a) => a.status === 201);
    const refused = answers.filter((a) => a.status === 409);
    expect(created).to.have.length(1);
    expect(refused).to.have.length(1);
    const { session: first } = created[0]!.body as { session: Session };
    expect(refused[0]!.body).to.deep.equal({
      error: 'conflict',
      reason: 'pairing_window_open',
      sessionId: first.sessionId,
    });
    expect(first).to.include({ hubId: target, state: 'open' });
    expect(Date.parse(first.closesAt) - Date.now()).to.be.within(100_000, 121_000);
  });

  it('adopts a candidate into a device (write_blocked lists exactly its writable capabilities) and rejects another', async () => {
    const opened = await open(hub, { durationSeconds: 300 });
    expect(opened.status).to.equal(201);
    const { sessionId } = (opened.body as { session: Session }).session;
    expect(
      await joins(hub, sessionId, PLUG, ['binary.switch', 'electrical.power_active', 'actuator.relay']),
    ).to.equal('joined');
    expect(await joins(hub, sessionId, SENSOR, ['environment.temperature'])).to.equal('joined');
    await api.catchUp();
    const listed = await session(sessionId);
    expect(listed.candidates.map((c) => [c.ieeeAddr, c.state, c.deviceId])).to.deep.equal([
      [PLUG, 'pending', null],
      [SENSOR, 'pending', null],
    ]);

    const adopted = await call(api, 'POST', `/v1/pairing/sessions/${sessionId}/adopt`, {
      token,
      body: { ieeeAddr: PLUG },
    });
    expect(adopted.status).to.equal(201);
    const body = adopted.body as { device: Record<string, unknown>; write_blocked: string[] };
    expect(body.write_blocked).to.have.members(['binary.switch', 'actuator.relay']).and.have.length(2);
    expect(body.device).to.include({
      parent_hub_id: hub,
      site_id: site,
      status: 'active',
      profile: 'draft',
      kind: 'device',
    });
    expect(body.device.id).to.match(/^dev_/).and.not.equal(PLUG);
    expect(JSON.stringify(body.device)).not.to.contain(PLUG.slice(2));
    const read = await call(api, 'GET', `/v1/devices/${body.device.id as string}`, { token });
    expect(read.body).to.deep.equal(body.device);

    const refused = await call(api, 'POST', `/v1/pairing/sessions/${sessionId}/reject`, {
      token,
      body: { ieeeAddr: SENSOR },
    });
    expect(refused.status).to.equal(200);
    expect((refused.body as { candidate: unknown }).candidate).to.deep.include({
      ieeeAddr: SENSOR,
      state: 'rejected',
      deviceId: null,
    });

    const after = await session(sessionId);
    expect(after.candidates.map((c) => [c.ieeeAddr, c.state, c.deviceId])).to.deep.equal([
      [PLUG, 'adopted', body.device.id],
      [SENSOR, 'rejected', null],
    ]);

    // A decision is taken once; an unknown candidate is not found.
    const again = await call(api, 'POST', `/v1/pairing/sessions/${sessionId}/adopt`, {
      token,
      body: { ieeeAddr: PLUG },
    });
    expect(again.status).to.equal(409);
    expect(again.body).to.deep.equal({
      error: 'conflict',
      reason: 'candidate_not_pending',
      state: 'adopted',
      deviceId: body.device.id,
    });
    const rejectAdopted = await call(api, 'POST', `/v1/pairing/sessions/${sessionId}/reject`, {
      token,
      body: { ieeeAddr: PLUG },
    });
    expect(rejectAdopted.status).to.equal(409);
    const unknown = await call(api, 'POST', `/v1/pairing/sessions/${sessionId}/adopt`, {
      token,
      body: { ieeeAddr: '0x0000000000000001' },
    });
    expect(unknown.status).to.equal(404);

    // The adopted device does not come back as a candidate; the rejected one stays rejected in a later window.
    await call(api, 'DELETE', `/v1/pairing/sessions/${sessionId}`, { token });
    const next = ((await open(hub)).body as { session: Session }).session;
    expect(await joins(hub, next.sessionId, PLUG, ['binary.switch'])).to.equal('already_adopted');
    expect(await joins(hub, next.sessionId, SENSOR, ['environment.temperature'])).to.equal('joined_rejected');
    await api.catchUp();
    expect((await session(next.sessionId)).candidates.map((c) => [c.ieeeAddr, c.state])).to.deep.equal([
      [SENSOR, 'rejected'],
    ]);
    const adoptRejected = await call(api, 'POST', `/v1/pairing/sessions/${next.sessionId}/adopt`, {
      token,
      body: { ieeeAddr: SENSOR },
    });
    expect(adoptRejected.status).to.equal(409);
    await call(api, 'DELETE', `/v1/pairing/sessions/${next.sessionId}`, { token });
  });

  it('a candidate has no public id: it cannot be listed, read or bound', async () => {
    const target = await newHub();
    const { sessionId } = ((await open(target)).body as { session: Session }).session;
    const ieee = '0x00124b00aabbccdd';
    await joins(target, sessionId, ieee, ['environment.temperature']);
    await api.catchUp();
    expect((await session(sessionId)).candidates).to.have.length(1);
    const devices = (await call(api, 'GET', '/v1/devices?limit=200', { token })).text;
    expect(devices).not.to.contain(ieee);
    expect(devices).not.to.contain(ieee.slice(2));
    for (const id of [ieee, ieee.slice(2)]) {
      expect((await call(api, 'GET', `/v1/devices/${id}`, { token })).status).to.equal(404);
      expect((await call(api, 'GET', `/v1/devices/${id}/state`, { token })).status).to.equal(404);
      const bound = await call(api, 'POST', '/v1/bindings', {
        token,
        body: { deviceId: id, resourceType: 'room', resourceId: 'r1' },
      });
      expect(bound.status).to.equal(404);
    }
    await call(api, 'DELETE', `/v1/pairing/sessions/${sessionId}`, { token });
  });

  it('DELETE closes the window now; closing it again answers the closed window; a join after it is ignored', async () => {
    const target = await newHub();
    const { sessionId } = ((await open(target)).body as { session: Session }).session;
    const closed = await call(api, 'DELETE', `/v1/pairing/sessions/${sessionId}`, { token });
    expect(closed.status).to.equal(200);
    const body = (closed.body as { session: Session }).session;
    expect(body).to.include({ sessionId, state: 'closed', closeReason: 'closed_by_client' });
    expect(Date.parse(body.closedAt!)).to.be.closeTo(Date.now(), 5000);
    const again = await call(api, 'DELETE', `/v1/pairing/sessions/${sessionId}`, { token });
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal(closed.body);
    expect(await joins(target, sessionId, PLUG, ['binary.switch'])).to.equal('window_closed');
    expect((await open(target)).status).to.equal(201);
  });

  it("another project's hub or session answers exactly like a missing one", async () => {
    const missingHub = await open('dev_doesnotexist');
    const foreign = await open(foreignHub);
    expect(missingHub.status).to.equal(404);
    expect(fingerprint(foreign)).to.deep.equal(fingerprint(missingHub));

    const { sessionId } = ((await open(foreignHub, {}, foreignToken)).body as { session: Session }).session;
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['DELETE', '', undefined],
      ['POST', '/adopt', { ieeeAddr: PLUG }],
      ['POST', '/reject', { ieeeAddr: PLUG }],
    ] as const) {
      const theirs = await call(api, method, `/v1/pairing/sessions/${sessionId}${suffix}`, { token, body });
      const missing = await call(api, method, `/v1/pairing/sessions/ps_doesnotexist${suffix}`, {
        token,
        body,
      });
      expect(theirs.status, `${method} ${suffix}`).to.equal(404);
      expect(fingerprint(theirs)).to.deep.equal(fingerprint(missing));
    }
    // Still open for its own project.
    expect(
      (await call(api, 'GET', `/v1/pairing/sessions/${sessionId}`, { token: foreignToken })).status,
    ).to.equal(200);
  });

  it('refuses a window length out of bounds (never clamped) and bodies that do not fit', async () => {
    const target = await newHub();
    for (const durationSeconds of [29, 601, 60.5]) {
      const answer = await open(target, { durationSeconds });
      expect(answer.status).to.equal(422);
      expect(answer.body).to.deep.equal({
        error: 'invalid_value',
        reason: 'out_of_range',
        field: 'durationSeconds',
      });
    }
    expect((await open(target, { durationSeconds: '60' })).status).to.equal(422);
    expect((await open(target, { extra: 1 })).status).to.equal(422);
    const created = await open(target, { durationSeconds: 30 });
    expect(created.status).to.equal(201);
    const { session: s } = created.body as { session: Session };
    const bad = await call(api, 'POST', `/v1/pairing/sessions/${s.sessionId}/adopt`, {
      token,
      body: { ieeeAddr: 'abc' },
    });
    expect(bad.status).to.equal(422);
  });

  it('needs devices:write', async () => {
    const tenant = await createTenant(api, ['devices:read']);
    const readOnly = await tenant.token();
    expect((await open(hub, {}, readOnly)).status).to.equal(403);
    expect((await call(api, 'GET', '/v1/pairing/sessions/ps_x', { token: readOnly })).status).to.equal(403);
  });
});
