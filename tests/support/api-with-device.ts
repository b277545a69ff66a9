import { SCOPES } from '../../src/domain/identity/index.js';
import { startTestApi, type TestApi } from './api-harness.js';
import { deviceOf, siteOf } from './registry.js';
import { createTenant, type Tenant } from './tenants.js';

export interface ApiWithDevice {
  readonly api: TestApi;
  readonly tenant: Tenant;
  /** A token with every scope. */
  readonly token: string;
  /** A registered device of the tenant, already in the read models. */
  readonly deviceId: string;
}

/**
 * For the enclosing describe: the real API with one tenant holding every scope and one device of its own,
 * started before its tests and closed after them. Read the fields inside tests and hooks, not before.
 */
export function apiWithDevice(): ApiWithDevice {
  const context = {} as { -readonly [K in keyof ApiWithDevice]: ApiWithDevice[K] };
  before(async () => {
    const api = await startTestApi();
    context.api = api;
    context.tenant = await createTenant(api, [...SCOPES]);
    context.token = await context.tenant.token();
    context.deviceId = await deviceOf(
      api,
      context.tenant.projectId,
      await siteOf(api, context.tenant.projectId),
    );
    await api.catchUp();
  });
  after(async () => {
    await context.api?.close();
  });
  return context;
}
