import { expect } from 'chai';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, setStatus, siteOf } from '../support/registry.js';
import { createTenant, type Tenant } from '../support/tenants.js';

interface DeviceList {
  devices: { id: string; product_model: string; status: string; site_id: string }[];
  nextCursor?: string;
}

describe('GET /v1/devices and GET /v1/devices/{publicId}', () => {
  let api: TestApi;
  let tenant: Tenant;
  let token: string;
  let site: string;
  let hub: string;
  let sensor: string;
  const list = async (query: string) => {
    const answer = await call(api, 'GET', `/v1/devices${query}`, { token });
    return { ...answer, page: answer.body as DeviceList };
  };

  before(async () => {
    api = await startTestApi();
    tenant = await createTenant(api, ['devices:read']);
    token = await tenant.token();
    site = await siteOf(api, tenant.projectId);
    hub = await deviceOf(api, tenant.projectId, site, {
      kind: 'hub',
      manufacturer: 'Dresden Elektronik',
      productModel: 'ConBee II',
      capabilities: ['system.uptime'],
      profile: 'verified',
    });
    sensor = await deviceOf(api, tenant.projectId, site, {
      parentHubId: hub,
      manufacturer: '_TZ3000_xr3htd96',
      productModel: 'TS0201',
      ieeeAddr: '0x00158d0001a2b3c4',
    });
    await api.catchUp();
  });
  after(() => api.close());

  it('serves the device object with snake_case fields, the public id, and never the radio address', async () => {
    const answer = await call(api, 'GET', `/v1/devices/${sensor}`, { token });
    expect(answer.status).to.equal(200);
    expect(answer.headers.get('cache-control')).to.equal('no-store');
    const device = answer.body as Record<string, unknown>;
    expect(Object.keys(device)).to.deep.equal([
      'id',
      'status',
      'manufacturer',
      'product_model',
      'parent_hub_id',
      'site_id',
      'kind',
      'profile',
      'capabilities',
      'created_at',
    ]);
    expect(device).to.deep.include({
      id: sensor,
      status: 'active',
      manufacturer: '_TZ3000_xr3htd96',
      product_model: 'TS0201',
      parent_hub_id: hub,
      site_id: site,
      kind: 'device',
      profile: 'draft',
      capabilities: ['environment.temperature', 'environment.humidity'],
    });
    expect(new Date(device.created_at as string).toISOString()).to.equal(device.created_at);
    expect(answer.text.toLowerCase()).to.not.include('00158d0001a2b3c4');
    expect(sensor).to.match(/^dev_[A-Za-z0-9_-]{22}$/);
  });

  it('gives a hub a null parent_hub_id', async () => {
    const answer = await call(api, 'GET', `/v1/devices/${hub}`, { token });
    expect(answer.body).to.deep.include({ parent_hub_id: null, kind: 'hub', profile: 'verified' });
  });

  it('answers an empty list with 200 and no cursor', async () => {
    const empty = await createTenant(api, ['devices:read']);
    const answer = await call(api, 'GET', '/v1/devices', { token: await empty.token() });
    expect(answer.status).to.equal(200);
    expect(answer.text).to.equal('{"devices":[]}');
  });

  describe('filters', () => {
    let otherSite: string;
    before(async () => {
      otherSite = await siteOf(api, tenant.projectId, 'Second plant');
      const a = await deviceOf(api, tenant.projectId, otherSite, { productModel: 'TS0201' });
      await deviceOf(api, tenant.projectId, otherSite, { productModel: 'ts0201' });
      await setStatus(api, a, 'quarantined');
      await api.catchUp();
    });

    it('combine status, model and site_id', async () => {
      const { page } = await list(`?site_id=${otherSite}&model=TS0201&status=quarantined`);
      expect(page.devices.map((d) => [d.site_id, d.product_model, d.status])).to.deep.equal([
        [otherSite, 'TS0201', 'quarantined'],
      ]);
      expect((await list(`?site_id=${otherSite}&model=TS0201&status=active`)).page.devices).to.deep.equal([]);
    });

    it('match product_model exactly, case included', async () => {
      expect((await list('?model=TS0201')).page.devices).to.have.length(2);
      expect((await list('?model=ts0201')).page.devices).to.have.length(1);
      expect((await list('?model=TS02')).page.devices).to.have.length(0);
    });

    it('refuse an unknown status, unknown or repeated parameters, and bad limits with 400 invalid_query', async () => {
      for (const [query, parameter] of [
        ['?status=broken', 'status'],
        ['?state=active', 'state'],
        ['?model=a&model=b', 'model'],
        ['?limit=0', 'limit'],
        ['?limit=-1', 'limit'],
        ['?limit=1.5', 'limit'],
        ['?limit=ten', 'limit'],
        ['?limit=', 'limit'],
        ['?model=', 'model'],
      ] as const) {
        const answer = await list(query);
        expect(answer.status, query).to.equal(400);
        expect(answer.body, query).to.deep.include({ error: 'invalid_query', parameter });
      }
    });
  });

  describe('cursor', () => {
    it('is refused with 400 invalid_query when tampered with, made up, or used with other filters', async () => {
      const first = await list('?limit=1');
      const cursor = first.page.nextCursor!;
      expect(cursor).to.be.a('string');
      const flipped = cursor.slice(0, 10) + (cursor[10] === 'A' ? 'B' : 'A') + cursor.slice(11);
      for (const bad of [flipped, cursor.slice(0, -2), 'AAAA', 'not a cursor!', cursor + 'A']) {
        const answer = await list(`?limit=1&cursor=${encodeURIComponent(bad)}`);
        expect(answer.status, bad).to.equal(400);
        expect(answer.body).to.deep.equal({
          error: 'invalid_query',
          reason: 'invalid_cursor',
          parameter: 'cursor',
        });
      }
      const otherFilters = await list(`?limit=1&status=active&cursor=${cursor}`);
      expect(otherFilters.status).to.equal(400);
      expect(otherFilters.body).to.deep.include({ error: 'invalid_query', reason: 'cursor_filters_changed' });
      expect((await list(`?limit=5&cursor=${cursor}`)).status, 'limit is not a filter').to.equal(200);
    });

    it('belongs to its project: another project cannot use it', async () => {
      const cursor = (await list('?limit=1')).page.nextCursor!;
      const stranger = await createTenant(api, ['devices:read']);
      const answer = await call(api, 'GET', `/v1/devices?limit=1&cursor=${cursor}`, {
        token: await stranger.token(),
      });
      expect(answer.status).to.equal(400);
      expect(answer.body).to.deep.include({ reason: 'invalid_cursor' });
    });

    it('is URL-safe and reveals nothing: the same position sealed twice gives two different cursors', async () => {
      const a = (await list('?limit=1')).page.nextCursor;
      const b = (await list('?limit=1')).page.nextCursor;
      expect(a).to.not.equal(b);
      expect(a).to.match(/^[A-Za-z0-9_-]+$/, 'URL-safe');
    });
  });
});

describe('walking the device list', () => {
  let api: TestApi;
  let token: string;
  let projectId: string;
  let site: string;
  const initial: string[] = [];

  before(async function () {
    this.timeout(120_000);
    api = await startTestApi();
    const tenant = await createTenant(api, ['devices:read']);
    projectId = tenant.projectId;
    token = await tenant.token();
    site = await siteOf(api, projectId);
    for (let chunk = 0; chunk < 1000; chunk += 25) {
      initial.push(...(await Promise.all(Array.from({ length: 25 }, () => deviceOf(api, projectId, site)))));
    }
    await api.catchUp();
  });
  after(() => api.close());

  it('serves 50 by default and at most 200 per page', async () => {
    const byDefault = (await call(api, 'GET', '/v1/devices', { token })).body as DeviceList;
    expect(byDefault.devices).to.have.length(50);
    expect(byDefault.nextCursor).to.be.a('string');
    const capped = (await call(api, 'GET', '/v1/devices?limit=100000', { token })).body as DeviceList;
    expect(capped.devices).to.have.length(200);
  });

  it('with limit=1 returns every device that existed at the start exactly once while others are added', async function () {
    this.timeout(120_000);
    const added: string[] = [];
    let walking = true;
    const adder = (async () => {
      while (walking && added.length < 300) {
        added.push(await deviceOf(api, projectId, site)); // the running projectors pick them up
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const seen: string[] = [];
    let cursor: string | undefined;
    try {
      do {
        const query = cursor === undefined ? '?limit=1' : `?limit=1&cursor=${cursor}`;
        const answer = await call(api, 'GET', `/v1/devices${query}`, { token });
        expect(answer.status).to.equal(200);
        const page = answer.body as DeviceList;
        expect(page.devices.length).to.be.at.most(1);
        seen.push(...page.devices.map((d) => d.id));
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    } finally {
      walking = false;
      await adder;
    }
    expect(added.length, 'devices were added during the walk').to.be.greaterThan(10);
    expect(new Set(seen).size, 'no device twice').to.equal(seen.length);
    // The initial devices come first, then only devices added during the walk.
    expect([...seen.slice(0, initial.length)].sort(), 'every initial device once').to.deep.equal(
      [...initial].sort(),
    );
    const late = seen.slice(initial.length);
    expect(
      late.every((id) => added.includes(id)),
      'only added devices after the initial ones',
    ).to.equal(true);
  });
});
