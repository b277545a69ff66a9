import { expect } from 'chai';
import { CAPABILITIES, toCatalogueEntryWire } from '../../src/domain/catalogue/index.js';
import { createSite } from '../../src/registry/sites.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';

describe('GET /v1/catalog/capabilities', () => {
  let api: TestApi;
  let token: string;
  before(async () => {
    api = await startTestApi();
    token = await (await createTenant(api, ['catalog:read'])).token();
  });
  after(() => api.close());

  it('serves the 40 entries of the catalogue in its wire form', async () => {
    const answer = await call(api, 'GET', '/v1/catalog/capabilities', { token });
    expect(answer.status).to.equal(200);
    const { capabilities } = answer.body as { capabilities: { key: string }[] };
    expect(capabilities).to.have.length(40);
    expect(capabilities).to.deep.equal(CAPABILITIES.map(toCatalogueEntryWire));
  });

  it('may be cached privately for an hour and revalidated with its ETag (304)', async () => {
    const first = await call(api, 'GET', '/v1/catalog/capabilities', { token });
    expect(first.headers.get('cache-control')).to.equal('private, max-age=3600');
    const etag = first.headers.get('etag')!;
    expect(etag).to.match(/^"[A-Za-z0-9_-]+"$/);
    const again = await call(api, 'GET', '/v1/catalog/capabilities', {
      token,
      // fetch would otherwise add Cache-Control: no-cache to a conditional request, which forbids a 304
      headers: { 'If-None-Match': etag, 'Cache-Control': 'max-age=0' },
    });
    expect(again.status).to.equal(304);
    expect(again.text).to.equal('');
  });
});

describe('GET /v1/sites', () => {
  let api: TestApi;
  let tenant: Tenant;
  before(async () => {
    api = await startTestApi();
    tenant = await createTenant(api, ['devices:read']);
  });
  after(() => api.close());

  it('lists the project’s sites, oldest first, with id, name and timezone', async () => {
    const paris = await createSite(api.store, {
      projectId: tenant.projectId,
      name: 'Paris',
      timezone: 'Europe/Paris',
    });
    const kolkata = await createSite(api.store, {
      projectId: tenant.projectId,
      name: 'Pune',
      timezone: 'Asia/Kolkata',
    });
    await api.catchUp();
    const answer = await call(api, 'GET', '/v1/sites', { token: await tenant.token() });
    expect(answer.status).to.equal(200);
    expect(answer.body).to.deep.equal({
      sites: [
        { siteId: paris.siteId, name: 'Paris', timezone: 'Europe/Paris' },
        { siteId: kolkata.siteId, name: 'Pune', timezone: 'Asia/Kolkata' },
      ],
    });
  });

  it('refuses a site in an unknown timezone or an unknown project, recording nothing', async () => {
    const refused = async (input: { projectId: string; timezone: string }) => {
      try {
        await createSite(api.store, { name: 'x', ...input });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(await refused({ projectId: tenant.projectId, timezone: 'Europe/Atlantis' })).to.match(
      /unknown_timezone/,
    );
    expect(await refused({ projectId: 'prj_doesnotexist00', timezone: 'UTC' })).to.match(/project not found/);
    await api.catchUp();
    const answer = await call(api, 'GET', '/v1/sites', { token: await tenant.token() });
    expect((answer.body as { sites: unknown[] }).sites).to.have.length(2);
  });

  it('refuses query parameters it does not take', async () => {
    const answer = await call(api, 'GET', '/v1/sites?limit=5', { token: await tenant.token() });
    expect(answer.status).to.equal(400);
    expect(answer.body).to.deep.equal({
      error: 'invalid_query',
      reason: 'unknown_parameter',
      parameter: 'limit',
    });
  });
});
