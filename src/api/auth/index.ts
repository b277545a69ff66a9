import type { Router, RequestHandler } from 'express';
import type { Config } from '../../config.js';
import type { EventStore } from '../../eventstore/port.js';
import type { Pool } from '../../infra/postgres/pool.js';
import { AccessTokens } from '../../identity/access-tokens.js';
import { ClientSecretHasher } from '../../identity/secret-hash.js';
import { SigningKeys } from '../../identity/signing-keys.js';
import { authenticate } from './authenticate.js';
import { metadataRoutes } from './metadata.js';
import { RevokedClients } from './revoked-clients.js';
import { tokenEndpoint } from './token-endpoint.js';

export { requireScope } from './require-scope.js';
export interface ApiAuth {
  /** GET /.well-known/oauth-authorization-server (RFC 8414), to mount at the root, without authentication. */
  readonly metadataRoutes: Router;
  /** POST /oauth/token, to mount under /v1 ahead of `authenticate`. */
  readonly tokenRoutes: Router;
  /** Bearer-token authentication for everything else under /v1. */
  readonly authenticate: RequestHandler;
  /** What authentication checks, asked again of tokens in long use: the live stream's open streams. */
  readonly revocations: TokenRevocations;
}

/** Whether a token that verified earlier has been revoked since, through its client or its signing key. */
export interface TokenRevocations {
  revoked(token: { readonly clientId: string; readonly keyId: string }): Promise<boolean>;
}

/** One app's authentication: its signing-key cache, revocation cache, token endpoint and middleware. */
export function createApiAuth(deps: {
  config: Config;
  pool: Pool;
  store: EventStore;
  now?: () => number;
}): ApiAuth {
  const now = deps.now ?? (() => Date.now());
  const keys = new SigningKeys(deps.pool, {
    now,
    refreshMs: deps.config.SIGNING_KEY_REFRESH_MS,
    encryptionKey: deps.config.SIGNING_KEY_ENCRYPTION_KEY,
  });
  const tokens = new AccessTokens(keys, deps.config.PUBLIC_BASE_URL, now);
  const revoked = new RevokedClients(deps.pool, { now });
  return {
    metadataRoutes: metadataRoutes(deps.config.PUBLIC_BASE_URL),
    tokenRoutes: tokenEndpoint({ store: deps.store, tokens, hasher: new ClientSecretHasher(deps.pool), now }),
    authenticate: authenticate({ tokens, revoked }),
    revocations: {
      // Both from caches: the client list's (REVOKED_CLIENTS_TTL_MS) and the key ring's (SIGNING_KEY_REFRESH_MS).
      revoked: async ({ clientId, keyId }) => (await revoked.has(clientId)) || !(await keys.verifies(keyId)),
    },
  };
}
