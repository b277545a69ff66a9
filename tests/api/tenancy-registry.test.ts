import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, fingerprint, siteOf } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';

const ALL = ['devices:read', 'devices:write', 'catalog:read'];
const FORBIDDEN = JSON.stringify({ error: 'forbidden' });
const NOT_FOUND = JSON.stringify({ error: 'not_found' });

/**
 * Every endpoint of the registry API x {no token, wrong scope, own resource, other project's resource,
 * missing resource}. "Other" must be indistinguishable from "missing": same status, bytes and headers.
 */
describe('registry API tenancy matrix', () => {
  let api: TestApi;
  let own: Tenant;
  let other: Tenant;
  let ownToken: string;
  let ownDevice: string;
  let otherDevice: string;
  let otherSite: string;

  before(async () => {
    api = await startTestApi();
    [own, other] = await Promise.all([createTenant(api, ALL), createTenant(api, ALL)]);
    ownToken = await own.token();
    const ownSite = await siteOf(api, own.projectId, 'Own plant');
    otherSite = await siteOf(api, other.projectId, 'Other plant');
    ownDevice = await deviceOf(api, own.projectId, ownSite);
    otherDevice = await deviceOf(api, other.projectId, otherSite);
    await call(api, 'POST', '/v1/bindings', {
      token: await other.token(),
      body: { deviceId: otherDevice, resourceType: 'room', resourceId: 'theirs' },
    });
    await api.catchUp();
  });
  after(() => api.close());

  const endpoints: {
    name: string;
    method: string;
    path: () => string;
    scope: string;
    body?: () => unknown;
  }[] = [
    { name: 'GET /v1/devices', method: 'GET', path: () => '/v1/devices', scope: 'devices:read' },
    {
      name: 'GET /v1/devices/{id}',
      method: 'GET',
      path: () => `/v1/devices/${ownDevice}`,
      scope: 'devices:read',
    },
    { name: 'GET /v1/sites', method: 'GET', path: () => '/v1/sites', scope: 'devices:read' },
    {
      name: 'GET /v1/catalog/capabilities',
      method: 'GET',
      path: () => '/v1/catalog/capabilities',
      scope: 'catalog:read',
    },
    {
      name: 'POST /v1/bindings',
      method: 'POST',
      path: () => '/v1/bindings',
      scope: 'devices:write',
      body: () => ({ deviceId: ownDevice, resourceType: 'room', resourceId: 'r-1' }),
    },
    { name: 'GET /v1/bindings', method: 'GET', path: () => '/v1/bindings', scope: 'devices:read' },
  ];

  for (const endpoint of endpoints) {
    describe(endpoint.name, () => {
      it('answers 401 without a token', async () => {
        const answer = await call(api, endpoint.method, endpoint.path(), { body: endpoint.body?.() });
        expect(answer.status).to.equal(401);
        expect(answer.body).to.have.property('error', 'unauthorized');
      });

      it('answers 403 without reasons when the token lacks the scope', async () => {
        const token = await own.token(ALL.filter((s) => s !== endpoint.scope));
        const answer = await call(api, endpoint.method, endpoint.path(), { token, body: endpoint.body?.() });
        expect(answer.status).to.equal(403);
        expect(answer.text).to.equal(FORBIDDEN);
      });

      it('answers 2xx for the caller’s own resource', async () => {
        const answer = await call(api, endpoint.method, endpoint.path(), {
          token: ownToken,
          body: endpoint.body?.(),
        });
        expect(answer.status).to.be.oneOf([200, 201]);
      });
    });
  }

  describe('other project’s resource = missing resource, byte for byte', () => {
    it('GET /v1/devices/{id}', async () => {
      const foreign = await call(api, 'GET', `/v1/devices/${otherDevice}`, { token: ownToken });
      const missing = await call(api, 'GET', '/v1/devices/dev_AAAAAAAAAAAAAAAAAAAAAA', { token: ownToken });
      expect(foreign.status).to.equal(404);
      expect(foreign.text).to.equal(NOT_FOUND);
      expect(fingerprint(foreign)).to.deep.equal(fingerprint(missing));
    });

    it('GET /v1/devices filtered on another project’s site, or on a site that does not exist', async () => {
      const foreign = await call(api, 'GET', `/v1/devices?site_id=${otherSite}`, { token: ownToken });
      const missing = await call(api, 'GET', '/v1/devices?site_id=site_AAAAAAAAAAAAAAAAAAAAAA', {
        token: ownToken,
      });
      expect(foreign.status).to.equal(200);
      expect(foreign.body).to.deep.equal({ devices: [] });
      expect(fingerprint(foreign)).to.deep.equal(fingerprint(missing));
    });

    it('GET /v1/devices, /v1/sites and /v1/bindings list only the caller’s project', async () => {
      const devices = (await call(api, 'GET', '/v1/devices', { token: ownToken })).body as {
        devices: { id: string }[];
      };
      expect(devices.devices.map((d) => d.id)).to.deep.equal([ownDevice]);
      const sites = (await call(api, 'GET', '/v1/sites', { token: ownToken })).body as {
        sites: { name: string }[];
      };
      expect(sites.sites.map((s) => s.name)).to.deep.equal(['Own plant']);
      const bindings = (await call(api, 'GET', '/v1/bindings', { token: ownToken })).body as {
        bindings: { deviceId: string }[];
      };
      expect(bindings.bindings.every((b) => b.deviceId === ownDevice)).to.equal(true);
    });

    it('the lists of a project with nothing read the same before and after another project fills up', async () => {
      const empty = await createTenant(api, ALL);
      const token = await empty.token();
      const paths = ['/v1/devices', '/v1/sites', '/v1/bindings'];
      const before = await Promise.all(paths.map((p) => call(api, 'GET', p, { token })));
      const site = await siteOf(api, other.projectId, 'Another');
      const device = await deviceOf(api, other.projectId, site);
      await call(api, 'POST', '/v1/bindings', {
        token: await other.token(),
        body: { deviceId: device, resourceType: 'room', resourceId: 'x' },
      });
      await api.catchUp();
      const after = await Promise.all(paths.map((p) => call(api, 'GET', p, { token })));
      expect(after.map(fingerprint)).to.deep.equal(before.map(fingerprint));
      expect(after.map((a) => a.body)).to.deep.equal([{ devices: [] }, { sites: [] }, { bindings: [] }]);
    });

    it('POST /v1/bindings for another project’s device, or a device that does not exist', async () => {
      const body = (deviceId: string) => ({ deviceId, resourceType: 'room', resourceId: 'r-2' });
      const foreign = await call(api, 'POST', '/v1/bindings', { token: ownToken, body: body(otherDevice) });
      const missing = await call(api, 'POST', '/v1/bindings', {
        token: ownToken,
        body: body('dev_AAAAAAAAAAAAAAAAAAAAAA'),
      });
      expect(foreign.status).to.equal(404);
      expect(foreign.text).to.equal(NOT_FOUND);
      expect(fingerprint(foreign)).to.deep.equal(fingerprint(missing));
    });

    it('GET /v1/catalog/capabilities has no per-project resource: every project reads the same catalogue', async () => {
      const mine = await call(api, 'GET', '/v1/catalog/capabilities', { token: ownToken });
      const theirs = await call(api, 'GET', '/v1/catalog/capabilities', { token: await other.token() });
      expect(fingerprint(mine)).to.deep.equal(fingerprint(theirs));
    });
  });

  it('a project id in the query or the body never widens the scope', async () => {
    const viaQuery = await call(api, 'GET', `/v1/devices?projectId=${other.projectId}`, { token: ownToken });
    expect(viaQuery.status).to.equal(400);
    const viaBody = await call(api, 'POST', '/v1/bindings', {
      token: ownToken,
      body: { deviceId: otherDevice, resourceType: 'room', resourceId: 'r', projectId: other.projectId },
    });
    expect(viaBody.status).to.equal(422);
  });
});
