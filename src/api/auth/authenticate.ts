import type { RequestHandler } from 'express';
import { effectiveScopes } from '../../domain/identity/scopes.js';
import type { AccessTokens } from '../../identity/access-tokens.js';
import { unauthenticated } from '../http-errors.js';
import type { RevokedClients } from './revoked-clients.js';

const REALM = 'realm="device-cloud"';
const NO_TOKEN = { 'WWW-Authenticate': `Bearer ${REALM}` };
const BAD_TOKEN = { 'WWW-Authenticate': `Bearer ${REALM}, error="invalid_token"` };
// RFC 6750 §2.1: b64token.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * Accepts a bearer token from the Authorization header and nowhere else: a token in the query string
 * (RFC 6750 §2.3) or the body ends up in logs and histories, so it is never looked at. Sets req.principal.
 */
export function authenticate(deps: { tokens: AccessTokens; revoked: RevokedClients }): RequestHandler {
  return async (req, _res, next) => {
    const header = req.get('authorization');
    if (!header) throw unauthenticated(NO_TOKEN);
    const token = BEARER.exec(header)?.[1];
    if (!token) throw unauthenticated(BAD_TOKEN);
    const verified = await deps.tokens.verify(token);
    if (!verified || (await deps.revoked.has(verified.clientId))) throw unauthenticated(BAD_TOKEN);
    req.principal = {
      projectId: verified.projectId,
      clientId: verified.clientId,
      scopes: effectiveScopes(verified.scopes),
      tokenId: verified.tokenId,
      expiresAt: verified.expiresAt,
      keyId: verified.keyId,
    };
    req.log = req.log.child({ clientId: verified.clientId, projectId: verified.projectId });
    next();
  };
}
