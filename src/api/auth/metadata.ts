import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { SCOPES } from '../../domain/identity/index.js';
import { ok, PUBLIC_HOUR, RATE_LIMITED, type OperationDeclaration } from '../openapi/operation.js';

export const METADATA_PATH = '/.well-known/oauth-authorization-server';

/** The token endpoint's path under the base URL; the router in token-endpoint.ts serves it under /v1. */
const TOKEN_PATH = '/v1/oauth/token';

/** RFC 8414 §2 authorization server metadata, as this deployment answers it. */
export const authorizationServerMetadataSchema = z.object({
  issuer: z.string().meta({ description: 'PUBLIC_BASE_URL: also the `iss` of every access token.' }),
  token_endpoint: z.string().meta({ description: 'Absolute URL of POST /v1/oauth/token.' }),
  grant_types_supported: z.array(z.literal('client_credentials')),
  token_endpoint_auth_methods_supported: z.array(z.enum(['client_secret_basic', 'client_secret_post'])).meta({
    description:
      'Both: a client created with --auth post may use either, one created with --auth basic only ' +
      'client_secret_basic (the metadata cannot say which a given client is).',
  }),
  scopes_supported: z.array(z.enum(SCOPES)),
  response_types_supported: z.array(z.string()).meta({
    description: 'Empty: there is no authorization endpoint, so no response type.',
  }),
});

type AuthorizationServerMetadata = z.infer<typeof authorizationServerMetadataSchema>;

function authorizationServerMetadata(publicBaseUrl: string): AuthorizationServerMetadata {
  return {
    // The configured string itself: RFC 8414 §3.3 compares it with the issuer the client started from, and
    // the tokens carry it as `iss`.
    issuer: publicBaseUrl,
    token_endpoint: withoutTrailingSlash(publicBaseUrl) + TOKEN_PATH,
    grant_types_supported: ['client_credentials'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    scopes_supported: [...SCOPES],
    // RFC 8414 lists it as required; with no authorization endpoint the true answer is none.
    response_types_supported: [],
  };
}

/**
 * GET /.well-known/oauth-authorization-server (no auth): RFC 8414 metadata. When PUBLIC_BASE_URL has a
 * path (https://host/devcloud), RFC 8414 §3.1 puts the well-known segment between host and path
 * (https://host/.well-known/oauth-authorization-server/devcloud): the proxy forwards that path unchanged,
 * so it is served too. The plain path stays for proxies that strip the prefix from
 * https://host/devcloud/.well-known/oauth-authorization-server, the form some clients try.
 */
export function metadataRoutes(publicBaseUrl: string): Router {
  const body = authorizationServerMetadata(publicBaseUrl);
  const basePath = withoutTrailingSlash(new URL(publicBaseUrl).pathname);
  const router = Router();
  const answer = (_req: Request, res: Response) => {
    // Fixed by configuration; an hour keeps a redeployment's change from lingering long.
    res.set('Cache-Control', 'public, max-age=3600').json(body);
  };
  router.get(METADATA_PATH, answer);
  if (basePath !== '') router.get(METADATA_PATH + escapeRoutePattern(basePath), answer);
  return router;
}

function withoutTrailingSlash(text: string): string {
  return text.replace(/\/+$/, '');
}

/** Express 5 route paths are patterns: characters with a meaning there are escaped to match literally. */
function escapeRoutePattern(path: string): string {
  return path.replace(/[{}()[\]+?!:*\\]/g, '\\$&');
}

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const metadataOperations: readonly OperationDeclaration[] = [
  [
    'get',
    METADATA_PATH,
    {
      operationId: 'getAuthorizationServerMetadata',
      summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
      description:
        'For discovery by OAuth libraries. When PUBLIC_BASE_URL has a path, also served at this path followed ' +
        'by that path (RFC 8414 §3.1). Cache-Control: public, max-age=3600.',
      security: [],
      responses: {
        200: ok('AuthorizationServerMetadata', 'The metadata.', PUBLIC_HOUR),
        429: RATE_LIMITED,
      },
    },
  ],
];
