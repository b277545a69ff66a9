import { expect } from 'chai';
import { setDeviceProfile } from '../../src/control/device-admin.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { expectDocumented, openLive } from '../support/live.js';
import { call, deviceOf, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

describe('GET /v1/live: command_update after a command accepted through the real route', function () {
  this.timeout(60_000);
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.close());

  it('sends command_update queued for the 201, then cancelled when the grant is revoked', async () => {
    const tenant = await createTenant(api, [
      'telemetry:live',
      'commands:write',
      'grants:admin',
      'devices:read',
    ]);
    const token = await tenant.token();
    const site = await siteOf(api, tenant.projectId);
    const deviceId = await deviceOf(api, tenant.projectId, site, { capabilities: ['binary.switch'] });
    await setDeviceProfile(api.store, { deviceId, profile: 'verified', now: new Date() });
    const grant = (write: boolean) =>
      call(api, 'PUT', `/v1/devices/${deviceId}/capability-grants`, {
        token,
        body: { capabilityKey: 'binary.switch', write },
      });
    expect((await grant(true)).status).to.equal(200);
    const stream = await openLive(api.baseUrl, {
      token,
      query: `types=command_update&deviceIds=${deviceId}`,
    });
    try {
      const accepted = await call(api, 'POST', `/v1/devices/${deviceId}/commands`, {
        token,
        body: { capabilityKey: 'binary.switch', value: true, mode: 'desired', ttlSeconds: 300 },
        headers: { 'Idempotency-Key': 'live-1' },
      });
      expect(accepted.status, accepted.text).to.equal(201);
      const { commandId } = (accepted.body as { command: { commandId: string } }).command;
      const queued = await stream.waitFor('queued', () => stream.frames('command_update')[0]);
      expect(queued.data).to.deep.include({
        commandId,
        deviceId,
        capability: 'binary.switch',
        status: 'queued',
      });
      expect((await grant(false)).status).to.equal(200);
      const cancelled = await stream.waitFor('cancelled', () =>
        stream.frames('command_update').find((f) => f.data.status === 'cancelled'),
      );
      expect(cancelled.data).to.deep.include({ commandId, status: 'cancelled', reason: 'grant_revoked' });
      expectDocumented(stream.frames());
    } finally {
      stream.close();
    }
  });
});
