import express, { Router, type RequestHandler } from 'express';
import {
  clientDecider,
  clientIdSchema,
  clientStream,
  effectiveScopes,
  parseScopeList,
  type ScopeName,
} from '../../domain/identity/index.js';
import { handleCommand } from '../../eventstore/handle-command.js';
import type { EventStore } from '../../eventstore/port.js';
import type { AccessTokens } from '../../identity/access-tokens.js';
import { loadClient } from '../../identity/clients.js';
import { isScryptHash, verifySecret, type ClientSecretHasher } from '../../identity/secret-hash.js';
import type { Logger } from '../../infra/logger.js';
import { HttpProblem } from '../http-errors.js';
import { unencodedBody } from '../json-body.js';
import { ClientFailures, tooManyFailures, VerificationSlots } from './verification-limits.js';
import {
  clientCredentials,
  formField,
  invalidClient,
  invalidRequest,
  type ClientCredentials,
} from './client-credentials.js';
import {
  ref,
  header,
  error,
  ok,
  RATE_LIMITED,
  UNAVAILABLE,
  FAULT,
  type OperationDeclaration,
  type Json,
} from '../openapi/operation.js';

const FORM = 'application/x-www-form-urlencoded';
// A token request is a handful of short fields; anything bigger is not one.
const parseForm = express.urlencoded({
  extended: false,
  limit: '4kb',
  parameterLimit: 16,
  type: FORM,
  inflate: false,
});

const noStore: RequestHandler = (_req, res, next) => {
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  next();
};

const requireForm: RequestHandler = (req, _res, next) => {
  if (!req.is(FORM)) throw invalidRequest(`the body must be ${FORM}`);
  next();
};

export interface TokenEndpointDependencies {
  readonly store: EventStore;
  readonly tokens: AccessTokens;
  readonly hasher: ClientSecretHasher;
  readonly now: () => number;
}

// Two costly checks at a time is the machine's two cores; eight more may wait the ~100 ms each takes.
const SCRYPT_SLOTS = { running: 2, waiting: 8 };
const FAILURES = { limit: 10, windowMs: 60_000 };

/**
 * POST /v1/oauth/token: the client_credentials grant (RFC 6749 §4.4, §5). The client is read from its own
 * event stream, so a client works the moment it is created and stops the moment it is revoked. Any other
 * method answers 405 with `Allow: POST`.
 */
export function tokenEndpoint(deps: TokenEndpointDependencies): Router {
  const slots = new VerificationSlots(SCRYPT_SLOTS);
  const failures = new ClientFailures({ ...FAILURES, now: deps.now });
  const router = Router();
  router.post('/oauth/token', noStore, unencodedBody, requireForm, parseForm, async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const grantType = formField(body, 'grant_type');
    if (!grantType) throw invalidRequest('grant_type is missing');
    if (grantType !== 'client_credentials') throw new HttpProblem(400, 'unsupported_grant_type');
    const requested = formField(body, 'scope');
    const credentials = clientCredentials(req, body);

    const client = await authenticateClient(deps, slots, failures, credentials, req.log);
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
  router.all('/oauth/token', () => {
    throw new HttpProblem(405, 'method_not_allowed', {}, { Allow: 'POST' });
  });
  return router;
}

/**
 * One answer for every failure (unknown id, revoked client, wrong method, wrong secret), and a keyed-hash
 * check (or its decoy) whatever the outcome, so neither the answer nor its timing tells client ids apart.
 * A client still on scrypt is checked within `slots`, and migrated to the keyed hash once its secret matched.
 */
async function authenticateClient(
  deps: TokenEndpointDependencies,
  slots: VerificationSlots,
  failures: ClientFailures,
  credentials: ClientCredentials,
  log: Logger,
) {
  const { clientId, clientSecret } = credentials;
  const client = clientIdSchema.safeParse(clientId).success
    ? await loadClient(deps.store, clientId)
    : ({ status: 'none' } as const);
  const limited = failures.retryAfter(clientId);
  let secretMatches: boolean;
  if (client.status === 'none') {
    secretMatches = await deps.hasher.verifyDecoy(clientSecret);
  } else if (isScryptHash(client.secretHash)) {
    if (limited > 0) throw tooManyFailures(limited);
    secretMatches = await slots.run(() => verifySecret(clientSecret, client.secretHash));
    if (secretMatches) await migrateHash(deps, clientId, clientSecret, log);
  } else {
    secretMatches = await deps.hasher.verify(clientSecret, client.secretHash);
  }
  // A basic client must use Basic (spec, Authentication rule 6); a post client may use either (RFC 6749 §2.3.1).
  const methodAllowed =
    client.status !== 'none' && (client.authMethod === 'post' || credentials.method === 'basic');
  if (!secretMatches || client.status !== 'active' || !methodAllowed) {
    failures.record(clientId);
    if (limited > 0) throw tooManyFailures(limited);
    throw invalidClient();
  }
  return client;
}

/** Records the secret that just matched under the keyed hash; a failure here only delays the migration. */
async function migrateHash(deps: TokenEndpointDependencies, clientId: string, secret: string, log: Logger) {
  try {
    await handleCommand(deps.store, clientStream(clientId), clientDecider, {
      type: 'RehashClientSecret',
      clientId,
      secretHash: await deps.hasher.hash(secret),
    });
  } catch (error) {
    log.warn({ err: error, clientId }, 'client secret hash not migrated; retried on its next token request');
  }
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

/** The token endpoint's answers, each with `Cache-Control: no-store` and `Pragma: no-cache` (RFC 6749 §5.1). */
function uncached(responses: Record<string, Json>): Record<string, Json> {
  const headers = {
    'Cache-Control': header('NoStore'),
    Pragma: { description: '`no-cache`.', schema: { type: 'string' } },
  };
  return Object.fromEntries(
    Object.entries(responses).map(([status, answer]) => [
      status,
      { ...answer, headers: { ...(answer.headers as Json | undefined), ...headers } },
    ]),
  );
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const tokenOperations: readonly OperationDeclaration[] = [
  [
    'post',
    '/v1/oauth/token',
    {
      operationId: 'issueAccessToken',
      summary: 'Access token (OAuth 2.0 client_credentials)',
      description:
        'Credentials in the form, or with HTTP Basic when the client was created for it (then credentials ' +
        'in the form answer invalid_client). No refresh token. Responses carry Cache-Control: no-store.',
      security: [{}, { clientBasic: [] }],
      requestBody: {
        required: true,
        content: { 'application/x-www-form-urlencoded': { schema: ref('TokenRequest') } },
      },
      responses: uncached({
        200: ok('TokenResponse', 'The access token.'),
        400: ok(
          'OAuthError',
          'invalid_request (also a body that is not a form), unsupported_grant_type or invalid_scope.',
        ),
        401: {
          ...ok('OAuthError', 'invalid_client: unknown client, wrong secret, revoked, or wrong method.'),
          headers: {
            'WWW-Authenticate': {
              description: '`Basic realm="device-cloud", charset="UTF-8"`.',
              required: true,
              schema: { type: 'string' },
            },
          },
        },
        413: error('A form over the size limit (`payload_too_large`).'),
        415: error('A Content-Encoding other than identity (`unsupported_media_type`).'),
        500: FAULT,
        429: {
          ...RATE_LIMITED,
          description:
            'Rate limit exceeded, or too many failed authentications of this client id (`rate_limited`).',
        },
        503: {
          ...UNAVAILABLE,
          description: `Too many secret checks waiting (\`temporarily_unavailable\`, Retry-After 1). ${UNAVAILABLE.description}`,
        },
      }),
    },
  ],
];
