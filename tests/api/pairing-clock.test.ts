import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

interface Session {
  sessionId: string;
  state: string;
  closesAt: string;
  closedAt?: string;
  closeReason?: string;
}

/**
 * A pairing window closes itself when its time is up (spec: "no call is needed"). Observed through the API
 * with the clock the routes are given, moved past the deadline rather than waited for.
 */
describe('a pairing window closing itself, through the API', () => {
  let api: TestApi;
  let offsetMs = 0;
  const clock = () => Date.now() + offsetMs;
  let token: string;
  let hubId: string;
  before(async () => {
    api = await startTestApi({}, { now: clock });
    const tenant = await createTenant(api, ['devices:read', 'devices:write']);
    token = await tenant.token();
    const site = await siteOf(api, tenant.projectId);
    hubId = await deviceOf(api, tenant.projectId, site, { kind: 'hub', parentHubId: null, capabilities: [] });
    await api.catchUp();
  });
  after(() => api.close());

  it('once the deadline passes, the hub takes a new window and the old one reads closed at its deadline', async () => {
    const opened = await call(api, 'POST', '/v1/pairing/sessions', {
      token,
      body: { hubId, durationSeconds: 30 },
    });
    expect(opened.status, opened.text).to.equal(201);
    const first = (opened.body as { session: Session }).session;
    expect(Date.parse(first.closesAt) - clock()).to.be.within(25_000, 30_000);

    const early = await call(api, 'POST', '/v1/pairing/sessions', { token, body: { hubId } });
    expect(early.status, 'still open before the deadline').to.equal(409);

    offsetMs += 31_000;
    const next = await call(api, 'POST', '/v1/pairing/sessions', { token, body: { hubId } });
    expect(next.status, next.text).to.equal(201);
    const second = (next.body as { session: Session }).session;
    expect(second.sessionId).not.to.equal(first.sessionId);
    expect(Date.parse(second.closesAt) - clock()).to.be.within(110_000, 120_000);

    const old = await call(api, 'GET', `/v1/pairing/sessions/${first.sessionId}`, { token });
    expect(old.status).to.equal(200);
    expect((old.body as { session: Session }).session).to.include({
      state: 'closed',
      closeReason: 'deadline',
      closedAt: first.closesAt,
    });
  });
});
