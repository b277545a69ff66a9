import { clientDecider, clientStream, type ClientAuthMethod } from '../../src/domain/identity/index.js';
import { handleCommand } from '../../src/eventstore/handle-command.js';
import { newClientId } from '../../src/identity/ids.js';
import { createClient } from '../../src/identity/clients.js';
import { ClientSecretHasher, hashSecret } from '../../src/identity/secret-hash.js';
import { createProject } from '../../src/identity/projects.js';
import type { TestApi } from './api-harness.js';

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
  const { projectId } = await createProject(api.store, { name: options.name ?? 'test project' });
  const client = await createClient(api.store, new ClientSecretHasher(api.db.pool), {
    projectId,
    scopes,
    authMethod: options.auth ?? 'post',
  });
  const credentials = { clientId: client.clientId, clientSecret: client.clientSecret };
  return {
    projectId,
    ...credentials,
    token: (narrowed) => requestToken(api.baseUrl, credentials, client.authMethod, narrowed),
  };
}

export function authHeader(token: string): { Authorization: string } {
  return { Authorization: `Bearer ${token}` };
}

/** Form-encodes one credential for HTTP Basic as RFC 6749 §2.3.1 asks (then base64 of "id:secret"). */
export function basicAuthorization(clientId: string, clientSecret: string): string {
  const encode = (s: string) => new URLSearchParams({ s }).toString().slice(2);
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

/** An access token from POST /v1/oauth/token, with the credentials sent the way the client must send them. */
export async function requestToken(
  baseUrl: string,
  credentials: { clientId: string; clientSecret: string },
  method: ClientAuthMethod,
  scopes: string[] | undefined,
): Promise<string> {
  const form = new URLSearchParams({ grant_type: 'client_credentials' });
  if (scopes) form.set('scope', scopes.join(' '));
  const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded' };
  if (method === 'basic') {
    headers.Authorization = basicAuthorization(credentials.clientId, credentials.clientSecret);
  } else {
    form.set('client_id', credentials.clientId);
    form.set('client_secret', credentials.clientSecret);
  }
  const response = await fetch(`${baseUrl}/v1/oauth/token`, {
    method: 'POST',
    headers,
    body: form,
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as { access_token?: string; error?: string };
  if (response.status !== 200 || !body.access_token) {
    throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
  }
  return body.access_token;
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
