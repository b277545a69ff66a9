import express, { Router, type RequestHandler } from 'express';
import {
  clientIdSchema,
  effectiveScopes,
  parseScopeList,
  type ScopeName,
} from '../../domain/identity/index.js';
import type { EventStore } from '../../eventstore/port.js';
import type { AccessTokens } from '../../identity/access-tokens.js';
import { loadClient } from '../../identity/clients.js';
import { prepareDecoy, verifyAgainstDecoy, verifySecret } from '../../identity/secret-hash.js';
import { HttpProblem } from '../http-errors.js';
import {
  clientCredentials,
  formField,
  invalidClient,
  invalidRequest,
  type ClientCredentials,
} from './client-credentials.js';

const FORM = 'application/x-www-form-urlencoded';
// A token request is a handful of short fields; anything bigger is not one.
const parseForm = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 16, type: FORM });

const noStore: RequestHandler = (_req, res, next) => {
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  next();
};

const requireForm: RequestHandler = (req, _res, next) => {
  if (!req.is(FORM)) throw invalidRequest(`the body must be ${FORM}`);
  next();
};

/**
 * POST /v1/oauth/token: the client_credentials grant (RFC 6749 §4.4, §5). The client is read from its own
 * event stream, so a client works the moment it is created and stops the moment it is revoked.
 */
export function tokenEndpoint(deps: { store: EventStore; tokens: AccessTokens }): Router {
  void prepareDecoy();
  const router = Router();
  router.post('/oauth/token', noStore, requireForm, parseForm, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const grantType = formField(body, 'grant_type');
    if (!grantType) throw invalidRequest('grant_type is missing');
    if (grantType !== 'client_credentials') throw new HttpProblem(400, 'unsupported_grant_type');
    const requested = formField(body, 'scope');
    const credentials = clientCredentials(req, body);

    const client = await authenticateClient(deps.store, credentials);
    const scopes = grantedScopes(client.scopes, requested);
    const issued = await deps.tokens.issue({
      clientId: client.clientId,
      projectId: client.projectId,
      scopes,
    });
    req.log.info(
      { clientId: client.clientId, projectId: client.projectId, scope: issued.scope },
      'token issued',
    );
    res.status(200).json({
      access_token: issued.token,
      token_type: 'Bearer',
      expires_in: issued.expiresIn,
      scope: issued.scope,
    });
  });
  return router;
}

/**
 * Runs one scrypt verification whatever the outcome (unknown id, revoked client, wrong method), so the
 * answer and its timing are the same for every failure.
 */
async function authenticateClient(store: EventStore, credentials: ClientCredentials) {
  const client = clientIdSchema.safeParse(credentials.clientId).success
    ? await loadClient(store, credentials.clientId)
    : ({ status: 'none' } as const);
  const secretMatches =
    client.status === 'none'
      ? await verifyAgainstDecoy(credentials.clientSecret)
      : await verifySecret(credentials.clientSecret, client.secretHash);
  // A basic client must use Basic (spec, Authentication rule 6); a post client may use either (RFC 6749 §2.3.1).
  const methodAllowed =
    client.status !== 'none' && (client.authMethod === 'post' || credentials.method === 'basic');
  if (!secretMatches || client.status !== 'active' || !methodAllowed) throw invalidClient();
  return client;
}

/** The requested scopes when the client holds them all; omitted or empty means every scope it holds. */
function grantedScopes(held: readonly ScopeName[], requested: string | undefined): ScopeName[] {
  if (requested === undefined || requested.trim() === '') return [...held];
  const { scopes, unknown } = parseScopeList(requested);
  const allowed = effectiveScopes(held);
  if (unknown.length > 0 || scopes.some((s) => !allowed.has(s))) {
    throw new HttpProblem(400, 'invalid_scope', {
      error_description: 'a requested scope is unknown or not held by this client',
    });
  }
  return scopes;
}
