import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import type express from 'express';
import { createApiApp } from '../../src/api/app.js';
import {
  DOCUMENTED_ROUTES,
  UNDOCUMENTED_ROUTES,
  openApiDocument,
  renderOpenApi,
} from '../../src/api/openapi/document.js';
import { healthSchema, tokenResponseSchema } from '../../src/api/openapi/token-and-health-schemas.js';
import { bindingCreatedSchema, bindingListSchema } from '../../src/api/routes/bindings.js';
import { catalogueSchema } from '../../src/api/routes/catalogue.js';
import { deviceListSchema, deviceSchema } from '../../src/api/routes/devices.js';
import { siteListSchema } from '../../src/api/routes/sites.js';
import { loadConfig } from '../../src/config.js';
import type { EventStore } from '../../src/eventstore/port.js';
import { createLogger } from '../../src/infra/logger.js';
import { createMetrics } from '../../src/infra/metrics.js';
import { createPool } from '../../src/infra/postgres/pool.js';
import { startTestApi, type TestApi } from '../support/api-harness.js';
import { call, deviceOf, siteOf } from '../support/registry.js';
import { createTenant } from '../support/tenants.js';

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  handle: { stack?: Layer[] };
  rawPath?: string;
}

/** "GET /v1/devices/:publicId" for every route express would dispatch to, walking nested routers. */
function expressRoutes(stack: readonly Layer[], prefix = ''): string[] {
  return stack.flatMap((layer) => {
    if (layer.route) {
      return Object.keys(layer.route.methods)
        .filter((m) => m !== '_all')
        .map((m) => `${m.toUpperCase()} ${prefix}${layer.route!.path}`);
    }
    if (!layer.handle.stack) return [];
    const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
    return expressRoutes(layer.handle.stack, prefix + mount);
  });
}

describe('OpenAPI document', () => {
  it('is checked in exactly as the code generates it (run `npm run openapi` after changing a route)', async () => {
    const checkedIn = await readFile(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
    expect(checkedIn === renderOpenApi(), 'docs/openapi.json is stale: run npm run openapi').to.equal(true);
  });

  it('describes every route the app serves, and nothing it does not', () => {
    const pool = createPool('postgres://nobody@127.0.0.1:1/never'); // never connected: routes only
    const app = createApiApp({
      config: loadConfig({ LOG_LEVEL: 'silent' }),
      logger: createLogger('silent'),
      metrics: createMetrics(),
      pool,
      store: {} as EventStore,
    }) as express.Express & { router: { stack: Layer[] } };
    const served = expressRoutes(app.router.stack).filter((r) => !UNDOCUMENTED_ROUTES.includes(r));
    expect([...new Set(served)].sort()).to.deep.equal([...DOCUMENTED_ROUTES].sort());
    void pool.end();
  });

  it('is OpenAPI 3.1 with every $ref resolving to a component', () => {
    const document = openApiDocument();
    expect(document.openapi).to.equal('3.1.0');
    const schemas = (document.components as { schemas: Record<string, unknown> }).schemas;
    const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map(
      (m) => m[1]!,
    );
    expect(refs.filter((r) => !(r in schemas))).to.deep.equal([]);
  });

  describe('served and truthful', () => {
    let api: TestApi;
    before(async () => {
      api = await startTestApi();
    });
    after(() => api.close());

    it('lists the 404 the commands POST answers for a device id no device can have', async () => {
      // The conformance check (tests/support/openapi-conformance.ts) fails the run if 404 is not listed.
      const tenant = await createTenant(api, ['commands:write']);
      const body = { capabilityKey: 'binary.switch', value: true, mode: 'desired', ttlSeconds: 60 };
      for (const id of ['with%20space', 'd'.repeat(300)]) {
        const answer = await call(api, 'POST', `/v1/devices/${id}/commands`, {
          token: await tenant.token(),
          body,
        });
        expect([answer.status, answer.body]).to.deep.equal([404, { error: 'not_found' }]);
      }
    });

    it('is served at GET /openapi.json without a token', async () => {
      const answer = await call(api, 'GET', '/openapi.json');
      expect(answer.status).to.equal(200);
      expect(answer.body).to.deep.equal(openApiDocument(api.config.PUBLIC_BASE_URL));
    });

    it('describes the bodies the endpoints really send', async () => {
      const tenant = await createTenant(api, ['devices:read', 'devices:write', 'catalog:read']);
      const token = await tenant.token();
      const site = await siteOf(api, tenant.projectId);
      const device = await deviceOf(api, tenant.projectId, site);
      await deviceOf(api, tenant.projectId, site);
      await api.catchUp();
      const get = async (path: string) => (await call(api, 'GET', path, { token })).body;
      // zod objects drop keys they do not know, so parsing to an equal value also proves no undocumented field
      const conforms = (schema: { parse(value: unknown): unknown }, body: unknown) =>
        expect(schema.parse(body)).to.deep.equal(body);
      const tokenAnswer = await fetch(`${api.baseUrl}/v1/oauth/token`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: tenant.clientId,
          client_secret: tenant.clientSecret,
        }),
      });
      conforms(tokenResponseSchema, await tokenAnswer.json());
      healthSchema.parse(await get('/health'));
      conforms(deviceListSchema, await get('/v1/devices?limit=1'));
      conforms(deviceSchema, await get(`/v1/devices/${device}`));
      conforms(siteListSchema, await get('/v1/sites'));
      conforms(catalogueSchema, await get('/v1/catalog/capabilities'));
      const created = await call(api, 'POST', '/v1/bindings', {
        token,
        body: { deviceId: device, resourceType: 'room', resourceId: 'r1' },
      });
      conforms(bindingCreatedSchema, created.body);
      conforms(bindingListSchema, await get('/v1/bindings'));
    });
  });
});
