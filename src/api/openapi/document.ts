import { z } from 'zod';
import { SCOPES, type ScopeName } from '../../domain/identity/index.js';
import { MAX_BODY_DEPTH } from '../storable-input.js';
import { healthOperations } from '../health.js';
import {
  bindingCreatedSchema,
  bindingListSchema,
  bindingOperations,
  bindingRequestSchema,
  bindingSchema,
} from '../routes/bindings.js';
import { catalogueEntrySchema, catalogueOperations, catalogueSchema } from '../routes/catalogue.js';
import {
  commandAnswerSchema,
  commandListSchema,
  commandOperations,
  commandRequestSchema,
  commandSchema,
} from '../routes/commands.js';
import {
  grantAnswerSchema,
  grantListSchema,
  grantOperations,
  grantRequestSchema,
  grantSchema,
} from '../routes/grants.js';
import { deviceStateOperations, deviceStateSchema } from '../routes/device-state.js';
import { deviceListSchema, deviceOperations, deviceSchema } from '../routes/devices.js';
import {
  adoptionSchema,
  candidateBodySchema,
  candidateRequestSchema,
  candidateSchema,
  pairingOpenRequestSchema,
  pairingOperations,
  pairingSessionBodySchema,
  pairingSessionSchema,
} from '../routes/pairing.js';
import { authorizationServerMetadataSchema, METADATA_PATH, metadataOperations } from '../auth/metadata.js';
import { tokenOperations } from '../auth/token-endpoint.js';
import { liveOperations } from '../live/route.js';
import { LIVE_FRAME_SCHEMAS } from '../live/wire.js';
import { siteListSchema, siteOperations, siteSchema } from '../routes/sites.js';
import { telemetryOperations, telemetrySchema } from '../routes/telemetry.js';
import {
  errorSchema,
  healthSchema,
  oauthErrorSchema,
  tokenRequestSchema,
  tokenResponseSchema,
} from './token-and-health-schemas.js';
import {
  clean,
  error,
  FAULT,
  header,
  liveFrameId,
  PUBLIC_HOUR,
  RATE_LIMITED,
  ref,
  UNAVAILABLE,
  type Json,
  type OperationDeclaration,
} from './operation.js';

/**
 * The OpenAPI 3.1 description of every route the API serves, assembled from the operations each route
 * file declares beside its routes (in the vocabulary of ./operation.ts) and the zod schemas the routes
 * validate and answer with, registered here as components. `npm run openapi` writes it to
 * docs/openapi.json; GET /openapi.json serves it.
 */
const requests = z.registry<{ id: string }>();
requests.add(bindingRequestSchema, { id: 'BindingRequest' });
requests.add(tokenRequestSchema, { id: 'TokenRequest' });
requests.add(pairingOpenRequestSchema, { id: 'PairingSessionRequest' });
requests.add(candidateRequestSchema, { id: 'CandidateRequest' });
requests.add(grantRequestSchema, { id: 'GrantRequest' });
requests.add(commandRequestSchema, { id: 'CommandRequest' });

const responses = z.registry<{ id: string }>();
for (const [schema, id] of [
  [deviceSchema, 'Device'],
  [deviceListSchema, 'DeviceList'],
  [siteSchema, 'Site'],
  [siteListSchema, 'SiteList'],
  [catalogueEntrySchema, 'CatalogueEntry'],
  [catalogueSchema, 'Catalogue'],
  [bindingSchema, 'Binding'],
  [bindingCreatedSchema, 'BindingCreated'],
  [bindingListSchema, 'BindingList'],
  [deviceStateSchema, 'DeviceState'],
  [telemetrySchema, 'Telemetry'],
  [pairingSessionSchema, 'PairingSession'],
  [pairingSessionBodySchema, 'PairingSessionBody'],
  [candidateSchema, 'PairingCandidate'],
  [candidateBodySchema, 'PairingCandidateBody'],
  [adoptionSchema, 'Adoption'],
  [grantSchema, 'Grant'],
  [grantAnswerSchema, 'GrantAnswer'],
  [grantListSchema, 'GrantList'],
  [commandSchema, 'Command'],
  [commandAnswerSchema, 'CommandAnswer'],
  [commandListSchema, 'CommandList'],
  [tokenResponseSchema, 'TokenResponse'],
  [oauthErrorSchema, 'OAuthError'],
  [healthSchema, 'Health'],
  [authorizationServerMetadataSchema, 'AuthorizationServerMetadata'],
  [errorSchema, 'Error'],
] as const) {
  responses.add(schema, { id });
}
for (const [event, schema] of Object.entries(LIVE_FRAME_SCHEMAS))
  responses.add(schema, { id: liveFrameId(event) });

/** Operator-only routes, deliberately left out of the application interface. */
export const UNDOCUMENTED_ROUTES: readonly string[] = [
  'GET /metrics', // Prometheus scrape for our own monitoring, behind METRICS_TOKEN, 404 without it
];

const SCOPE_DESCRIPTIONS: Readonly<Record<ScopeName, string>> = {
  'devices:read':
    'GET /v1/devices, GET /v1/devices/{publicId}, the state endpoint, GET /v1/sites, GET /v1/bindings',
  'devices:write': 'POST /v1/bindings and all of /v1/pairing/*',
  'telemetry:read': 'the telemetry endpoint',
  'telemetry:live': 'GET /v1/live',
  'catalog:read': 'GET /v1/catalog/capabilities',
  'commands:read': 'GET /v1/commands/{commandId} and GET /v1/devices/{publicId}/commands',
  'commands:write': 'POST /v1/devices/{publicId}/commands',
  'commands:high_risk': 'S3 capabilities, in addition to commands:write',
  'grants:admin': 'PUT capability-grants with write true: enable write grants (implies grants:revoke)',
  'grants:revoke': 'PUT capability-grants with write false: revoke write grants',
};

type Operation = Json & { responses: Record<string, Json>; security?: unknown[] };

/** Headers several answers carry, described once. */
const SHARED_HEADERS: Json = {
  RequestId: {
    description:
      "The request's id, in our logs too: the caller's X-Request-Id when it is 1-64 of [A-Za-z0-9._-], else a new UUID.",
    required: true,
    schema: { type: 'string' },
  },
  RetryAfter: {
    description: 'Seconds to wait before trying again.',
    schema: { type: 'integer', minimum: 0 },
  },
  ETag: {
    description: 'A validator of this body; a GET sending it back in If-None-Match may answer 304.',
    schema: { type: 'string' },
  },
  NoStore: { description: '`no-store`: the answer is not to be cached.', schema: { type: 'string' } },
};

/** What the edge answers under /v1, past authentication, whatever the route (docs/api.md, "Errors"). */
const V1_EDGE: Readonly<Record<string, Json>> = {
  400: error(
    'A bad query parameter (`invalid_query`, with `reason` such as `unknown_parameter`, ' +
      '`repeated_parameter` or `invalid_text`, and `parameter`), or a malformed JSON body ' +
      '(`invalid_request`, `malformed_json`).',
  ),
  401: {
    ...error('Missing, expired or invalid token (`unauthorized`).'),
    headers: {
      'WWW-Authenticate': {
        description: 'RFC 6750: `Bearer realm="device-cloud"`, with `error="invalid_token"` for a bad token.',
        required: true,
        schema: { type: 'string' },
      },
    },
  },
  413: error('A body over 64 kB (`payload_too_large`).'),
  415: error(
    'A body that is not JSON, or with a Content-Encoding other than identity (`unsupported_media_type`).',
  ),
  422: error(
    `A body nested deeper than ${MAX_BODY_DEPTH} (\`too_deep\`, with \`maxDepth\`), or with a string that ` +
      'cannot be stored (`invalid_text`).',
  ),
};

/** Two descriptions of one status: the operation's own first, then what the edge adds. */
function merged(own: Json | undefined, edge: Json): Json {
  if (own === undefined) return edge;
  return {
    ...edge,
    ...own,
    description: `${own.description as string} Also: ${edge.description as string}`,
    headers: { ...(edge.headers as Json | undefined), ...(own.headers as Json | undefined) },
  };
}

/**
 * Every answer an operation can give besides its own outcomes: the edge's statuses (rate limit,
 * unavailable dependency, and under /v1 the query, body and token checks), and on every answer the
 * headers the middleware adds (X-Request-Id; ETag on a JSON body, as express sends it).
 */
function withEdgeAnswers(operation: Operation): Operation {
  const authenticated = (operation.security ?? []).some((s) => Object.keys(s as Json).includes('oauth2'));
  const responses: Record<string, Json> = { ...operation.responses };
  if (authenticated)
    for (const [status, edge] of Object.entries(V1_EDGE)) responses[status] = merged(responses[status], edge);
  responses[429] ??= RATE_LIMITED;
  responses[500] ??= FAULT;
  responses[503] = responses[503] === undefined ? UNAVAILABLE : merged(responses[503], UNAVAILABLE);
  const withHeaders = Object.fromEntries(
    Object.entries(responses).map(([status, answer]) => {
      const content = answer.content as Json | undefined;
      const json = content?.['application/json'] !== undefined;
      const headers = {
        'X-Request-Id': header('RequestId'),
        ...(json && { ETag: header('ETag') }),
        ...(answer.headers as Json | undefined),
      };
      return [status, { ...answer, headers }];
    }),
  );
  return { ...operation, responses: withHeaders };
}

/** Express-style method and path of each operation, then the operation. */
const OPERATIONS: readonly OperationDeclaration[] = [
  ...healthOperations,
  [
    'get',
    '/openapi.json',
    {
      operationId: 'getOpenApiDocument',
      summary: 'This document',
      security: [],
      responses: {
        200: {
          description: 'The OpenAPI 3.1 document.',
          headers: PUBLIC_HOUR,
          content: { 'application/json': { schema: { type: 'object' } } },
        },
        429: RATE_LIMITED,
      },
    },
  ],
  ...metadataOperations,
  ...tokenOperations,
  ...deviceOperations,
  ...siteOperations,
  ...catalogueOperations,
  ...bindingOperations,
  ...deviceStateOperations,
  ...telemetryOperations,
  ...pairingOperations(),
  ...liveOperations,
  ...grantOperations,
  ...commandOperations,
];

/** "GET /v1/devices/:publicId" for each documented operation, as express declares its routes. */
export const DOCUMENTED_ROUTES: readonly string[] = OPERATIONS.map(([m, p]) => `${m.toUpperCase()} ${p}`);

/**
 * The server docs/openapi.json names, a reserved name (RFC 2606) that resolves nowhere: the checked-in
 * document belongs to no deployment. GET /openapi.json names its own deployment's PUBLIC_BASE_URL.
 */
const PLACEHOLDER_BASE_URL = 'https://device-cloud.invalid';

/** The document for a deployment reached at `publicBaseUrl` (its servers and token URL). */
export function openApiDocument(publicBaseUrl: string = PLACEHOLDER_BASE_URL): Json {
  const base = publicBaseUrl.replace(/\/+$/, '');
  const paths: Record<string, Json> = {};
  for (const [method, expressPath, operation] of OPERATIONS) {
    const path = expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const described = withEdgeAnswers(operation as Operation);
    paths[path] = { ...paths[path], [method]: described };
  }
  // RFC 8414 §3.1: with a path in PUBLIC_BASE_URL the metadata is also served after the well-known segment.
  const basePath = new URL(base).pathname.replace(/\/+$/, '');
  if (basePath !== '') {
    const metadata = paths[METADATA_PATH]!.get as Json;
    paths[METADATA_PATH + basePath] = {
      get: { ...metadata, operationId: 'getAuthorizationServerMetadataUnderBasePath' },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Device Cloud API',
      version: 'v1',
      description:
        'EU-hosted cloud for connected devices: register and list devices and sites, read their state and ' +
        'telemetry history, follow them live (Server-Sent Events), pair new devices through a hub, and send ' +
        'commands to them behind a safety gate of write grants. Every path but /health, /openapi.json, the ' +
        'OAuth metadata and the token endpoint needs Authorization: Bearer <ACCESS_TOKEN> (OAuth 2.0 ' +
        'client_credentials). Every answer carries X-Request-Id; every operation may answer 429 and 503 with ' +
        'Retry-After. Any other path, or a method a path does not serve, answers 404 `not_found` (under /v1, ' +
        '401 first without a token, and a body refused as on any operation); other methods on the token endpoint answer 405 `method_not_allowed` ' +
        'with `Allow: POST`. Decisions the interface leaves open are in docs/api.md.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      {
        url: base,
        description: 'This deployment (PUBLIC_BASE_URL); in docs/openapi.json, a placeholder for it.',
      },
    ],
    paths,
    components: {
      schemas: {
        ...componentSchemas(requests, 'input'),
        ...componentSchemas(responses, 'output'),
        LiveFrame: {
          description: 'The `data` of one live frame; its `event` line names which.',
          anyOf: Object.keys(LIVE_FRAME_SCHEMAS).map((e) => ref(liveFrameId(e))),
        },
      },
      headers: SHARED_HEADERS,
      securitySchemes: {
        oauth2: {
          type: 'oauth2',
          flows: {
            clientCredentials: {
              tokenUrl: `${base}/v1/oauth/token`,
              scopes: Object.fromEntries(SCOPES.map((s) => [s, SCOPE_DESCRIPTIONS[s]])),
            },
          },
        },
        clientBasic: {
          type: 'http',
          scheme: 'basic',
          description: 'Client id and secret, for the token endpoint.',
        },
      },
    },
  };
}

function componentSchemas(registry: z.core.$ZodRegistry<{ id: string }>, io: 'input' | 'output'): Json {
  const { schemas } = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}` });
  // Requests are closed (unknown fields are refused); answers may gain fields, so they are left open.
  const open = (schema: Json) => (io === 'input' ? schema : dropClosedObjects(schema));
  return Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, open(clean(schema as Json))]));
}

function dropClosedObjects(schema: Json): Json {
  return JSON.parse(
    JSON.stringify(schema, (key, value: unknown) =>
      key === 'additionalProperties' && value === false ? undefined : value,
    ),
  ) as Json;
}

/** The checked-in form, docs/openapi.json: two-space JSON and a final newline. */
export const renderOpenApi = () => JSON.stringify(openApiDocument(), null, 2) + '\n';
