import type { Server } from 'node:http';
import { expect } from 'chai';
import { createApiApp } from '../../src/api/app.js';
import { cursorKeys } from '../../src/api/pagination/cursor-keys.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

describe('cursor keys', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(() => api.close());

  it('are created once, whoever asks first, even when instances race', async () => {
    const keys = await Promise.all(Array.from({ length: 8 }, () => cursorKeys(api.db.pool)('race-test')));
    expect(keys[0]).to.have.length(32);
    expect(new Set(keys.map((k) => k.toString('hex'))).size).to.equal(1);
  });

  it('live in PostgreSQL: a cursor from one API instance works on another', async () => {
    const tenant = await createTenant(api, ['devices:read']);
    const token = await tenant.token();
    const site = await siteOf(api, tenant.projectId);
    await deviceOf(api, tenant.projectId, site);
    await deviceOf(api, tenant.projectId, site);
    await api.catchUp();
    const first = (await call(api, 'GET', '/v1/devices?limit=1', { token })).body as { nextCursor: string };

    const app = createApiApp({
      config: api.config,
      logger: createLogger('silent'),
      metrics: createMetrics(),
      pool: api.db.pool,
      store: api.store,
    });
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const other = { ...api, baseUrl: `http://127.0.0.1:${port}` };
      const second = await call(other, 'GET', `/v1/devices?limit=1&cursor=${first.nextCursor}`, { token });
      expect(second.status).to.equal(200);
      expect((second.body as { devices: unknown[] }).devices).to.have.length(1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
