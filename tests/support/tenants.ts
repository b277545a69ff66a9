import { clientDecider, clientStream, type ClientAuthMethod } from '../../src/domain/identity/index.js';
import { handleCommand } from '../../src/eventstore/handle-command.js';
import type { EventStore } from '../../src/eventstore/port.js';
import type { Pool } from '../../src/infra/postgres/pool.js';
import { newClientId } from '../../src/identity/ids.js';
import { createClient } from '../../src/identity/clients.js';
import { ClientSecretHasher, hashSecret } from '../../src/identity/secret-hash.js';
import { createProject } from '../../src/identity/projects.js';
import { requestToken } from '../../tools/soak/oauth-token.js';
import type { TestApi } from './api-harness.js';

export { basicAuthorization, requestToken } from '../../tools/soak/oauth-token.js';

export interface Tenant {
  readonly projectId: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** A fresh access token from POST /v1/oauth/token; every scope of the client unless narrowed. */
  token(scopes?: string[]): Promise<string>;
}

/**
 * A project with one OAuth client holding `scopes`, made by the same application services as
 * `devcloud project create` and `devcloud client create` (real events in the store).
 */
export async function createTenant(
  api: TestApi,
  scopes: string[],
  options: { auth?: ClientAuthMethod; name?: string } = {},
): Promise<Tenant> {
  const { projectId, client } = await projectWithClient(api.store, api.db.pool, scopes, options);
  const credentials = { clientId: client.clientId, clientSecret: client.clientSecret };
  return {
    projectId,
    ...credentials,
    token: (narrowed) => requestToken(api.baseUrl, credentials, client.authMethod, narrowed),
  };
}

/**
 * A project and one OAuth client of it holding `scopes` (client_secret_post unless `auth` says otherwise),
 * made by the same application services as `devcloud project create` and `devcloud client create`.
 */
export async function projectWithClient(
  store: EventStore,
  pool: Pool,
  scopes: string[],
  options: { auth?: ClientAuthMethod; name?: string } = {},
) {
  const { projectId } = await createProject(store, { name: options.name ?? 'test project' });
  const client = await createClient(store, new ClientSecretHasher(pool), {
    projectId,
    scopes,
    authMethod: options.auth ?? 'post',
  });
  return { projectId, client };
}

export function authHeader(token: string): { Authorization: string } {
  return { Authorization: `Bearer ${token}` };
}

/**
 * A client whose secret we choose, recorded through the real decider (generated secrets are URL-safe), under
 * the keyed hash, or under scrypt as clients created before keyed hashes were.
 */
export async function clientWithSecret(
  api: TestApi,
  secret: string,
  authMethod: ClientAuthMethod,
  hash: 'keyed' | 'scrypt' = 'keyed',
) {
  const { projectId } = await createProject(api.store, { name: 'chosen secret' });
  const clientId = newClientId();
  await handleCommand(api.store, clientStream(clientId), clientDecider, {
    type: 'CreateClient',
    clientId,
    projectId,
    projectExists: true,
    scopes: ['devices:read'],
    authMethod,
    secretHash:
      hash === 'keyed' ? await new ClientSecretHasher(api.db.pool).hash(secret) : await hashSecret(secret),
  });
  return { clientId, projectId };
}
