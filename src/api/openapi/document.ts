import { z } from 'zod';
import { SCOPES, type ScopeName } from '../../domain/identity/index.js';
import { idempotencyKeyHeader } from '../idempotency-key.js';
import { MAX_BODY_DEPTH } from '../storable-input.js';
import {
  bindingCreatedSchema,
  bindingListSchema,
  bindingRequestSchema,
  bindingSchema,
} from '../routes/bindings.js';
import { catalogueEntrySchema, catalogueSchema } from '../routes/catalogue.js';
import {
  commandAnswerSchema,
  commandListQuerySchema,
  commandListSchema,
  commandRequestSchema,
  commandSchema,
} from '../routes/commands.js';
import { grantAnswerSchema, grantListSchema, grantRequestSchema, grantSchema } from '../routes/grants.js';
import { deviceStateSchema } from '../routes/device-state.js';
import { deviceListQuerySchema, deviceListSchema, deviceSchema } from '../routes/devices.js';
import {
  adoptionSchema,
  candidateBodySchema,
  candidateRequestSchema,
  candidateSchema,
  pairingOpenRequestSchema,
  pairingSessionBodySchema,
  pairingSessionSchema,
} from '../routes/pairing.js';
import { authorizationServerMetadataSchema, METADATA_PATH } from '../auth/metadata.js';
import { liveQuerySchema } from '../live/route.js';
import { LIVE_FRAME_SCHEMAS } from '../live/wire.js';
import { siteListSchema, siteSchema } from '../routes/sites.js';
import { telemetryQuerySchema, telemetrySchema } from '../routes/telemetry.js';
import {
  errorSchema,
  healthSchema,
  oauthErrorSchema,
  tokenRequestSchema,
  tokenResponseSchema,
} from './described-elsewhere.js';

type Json = Record<string, unknown>;

/**
 * The OpenAPI 3.1 description of every route the API serves, built from the zod schemas the routes
 * validate and answer with. `npm run openapi` writes it to docs/openapi.json; GET /openapi.json serves it.
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
const frameId = (event: string) => `LiveFrame_${event}`;
for (const [event, schema] of Object.entries(LIVE_FRAME_SCHEMAS))
  responses.add(schema, { id: frameId(event) });

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

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

const error = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('Error') } },
});

/** A bearer-authenticated operation: the scope it needs, and the 403 of a token without it. */
function secured(scope: ScopeName, operation: Json & { responses: Json }): Json {
  return {
    ...operation,
    security: [{ oauth2: [scope] }],
    responses: {
      ...operation.responses,
      403: error(`The token lacks ${scope} (\`forbidden\`, no reasons).`),
    },
  };
}

/** A JSON answer; `no-store` unless it says how it may be cached. */
const ok = (id: string, description: string, headers: Json = {}) => ({
  description,
  headers: { 'Cache-Control': header('NoStore'), ...headers },
  content: { 'application/json': { schema: ref(id) } },
});

const PUBLIC_HOUR = {
  'Cache-Control': { description: '`public, max-age=3600`.', schema: { type: 'string' } },
};

const STREAM_HEADERS = {
  'Cache-Control': { description: '`no-store, no-transform`.', schema: { type: 'string' } },
  'X-Accel-Buffering': {
    description: '`no`: tells a buffering proxy to pass frames on at once.',
    schema: { type: 'string' },
  },
};

const LIVE_BAD_QUERY = error(
  'Bad query (`invalid_query`: unknown parameter such as projectId, a token in the query string ' +
    '(`token_in_query_string`), a heartbeat that is not a number), or an unknown type or capability ' +
    '(`invalid_filter`, with `invalid` and `valid`).',
);

const INVALID_QUERY = error(
  'Unknown, repeated or malformed query parameter (`invalid_query`, with `parameter`).',
);

/**
 * Query parameters from a route's strict query schema: name, optionality, description and JSON Schema. A
 * parameter the schema turns into a number (`limit`, `heartbeat`) is described by that number's type.
 */
function queryParameters(schema: z.ZodObject): Json[] {
  return Object.entries(schema.shape).map(([name, field]) => {
    const { description, ...input } = clean(z.toJSONSchema(field as z.ZodType, { io: 'input' }));
    const { description: _same, ...output } = clean(z.toJSONSchema(field as z.ZodType, { io: 'output' }));
    const numeric = output.type === 'integer' || output.type === 'number';
    return {
      name,
      in: 'query',
      required: !(field as z.ZodType).safeParse(undefined).success,
      ...(description !== undefined && { description }),
      schema: numeric ? output : input,
    };
  });
}

type Operation = Json & { responses: Record<string, Json>; security?: unknown[] };

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

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

const RATE_LIMITED = {
  description: 'Rate limit exceeded (30 requests/s per IP, burst 60) (`rate_limited`).',
  headers: { 'Retry-After': header('RetryAfter') },
  content: { 'application/json': { schema: ref('Error') } },
};

const UNAVAILABLE = {
  description:
    'A dependency cannot be reached (`transport_unavailable`, Retry-After 5) or turned the request away ' +
    '(`temporarily_unavailable`, Retry-After 1); nothing was recorded.',
  headers: { 'Retry-After': header('RetryAfter') },
  content: { 'application/json': { schema: ref('Error') } },
};

const FAULT = error('A fault of the service (`internal_error`); the answer says nothing more, the log does.');

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

/** Express-style method and path of each operation, then the operation. */
const OPERATIONS: readonly (readonly [string, string, Json])[] = [
  [
    'get',
    '/health',
    {
      summary: 'Liveness of the service and its dependencies',
      security: [],
      responses: {
        200: ok('Health', 'The service and its dependencies answer.'),
        503: ok('Health', 'A dependency is down; the body names it.'),
        429: RATE_LIMITED,
      },
    },
  ],
  [
    'get',
    '/openapi.json',
    {
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
  [
    'get',
    METADATA_PATH,
    {
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
  [
    'post',
    '/v1/oauth/token',
    {
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
  [
    'get',
    '/v1/devices',
    secured('devices:read', {
      summary: "A page of the project's devices",
      description:
        'Filters combine and match exactly (case-sensitive). Pages are in registration order; follow ' +
        'nextCursor, with the same filters, until it is absent. Devices registered during a walk appear at its end.',
      parameters: queryParameters(deviceListQuerySchema),
      responses: {
        200: ok('DeviceList', 'A page of devices; an empty list is a valid answer.'),
        400: INVALID_QUERY,
      },
    }),
  ],
  [
    'get',
    '/v1/devices/:publicId',
    secured('devices:read', {
      summary: 'One device',
      parameters: [{ name: 'publicId', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        200: ok('Device', 'The device.'),
        400: INVALID_QUERY,
        404: error('No such device in your project (`not_found`); a foreign device answers the same.'),
      },
    }),
  ],
  [
    'get',
    '/v1/sites',
    secured('devices:read', {
      summary: "The project's sites, oldest first (not paginated)",
      responses: { 200: ok('SiteList', 'Every site of the project.'), 400: INVALID_QUERY },
    }),
  ],
  [
    'get',
    '/v1/catalog/capabilities',
    secured('catalog:read', {
      summary: 'The capability catalogue',
      responses: {
        200: ok('Catalogue', 'Every catalogue entry.', {
          'Cache-Control': { schema: { type: 'string' }, description: '`private, max-age=3600`.' },
          ETag: {
            schema: { type: 'string' },
            description: 'Strong validator; send it back in If-None-Match.',
          },
        }),
        304: {
          description: 'Not modified since the ETag sent in If-None-Match.',
          headers: {
            'Cache-Control': { schema: { type: 'string' }, description: '`private, max-age=3600`.' },
            ETag: { schema: { type: 'string' }, description: 'The validator that matched.' },
          },
        },
        400: INVALID_QUERY,
      },
    }),
  ],
  [
    'post',
    '/v1/bindings',
    secured('devices:write', {
      summary: 'Bind a device to an object of your application',
      parameters: [idempotencyKeyHeader('body')],
      requestBody: { required: true, content: { 'application/json': { schema: ref('BindingRequest') } } },
      responses: {
        201: ok('BindingCreated', 'The binding (also on an idempotent replay).'),
        404: error('No such device in your project (`not_found`); a foreign device answers the same.'),
        409: error('The idempotency key was used with a different body (`conflict`).'),
        422: error('Validation failure (`invalid_request`, with `reason` and `field`).'),
      },
    }),
  ],
  [
    'get',
    '/v1/bindings',
    secured('devices:read', {
      summary: "The project's bindings, oldest first (not paginated)",
      responses: { 200: ok('BindingList', 'Every binding of the project.'), 400: INVALID_QUERY },
    }),
  ],
  [
    'get',
    '/v1/devices/:publicId/state',
    secured('devices:read', {
      summary: 'Latest value of each capability, with quality markers and connectivity',
      description:
        'A capability absent from state[] has no value yet. Quality and connectivity: docs/telemetry.md.',
      parameters: [{ name: 'publicId', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        200: ok('DeviceState', 'The state; an empty state[] when nothing was reported yet.', {
          'X-Projection-Lag-Seconds': {
            description: 'How far the read models were behind the event store, in seconds (3 decimals).',
            schema: { type: 'number', minimum: 0 },
          },
          'X-Projection-Lag-Measured-At': {
            description: 'When that lag was measured.',
            schema: { type: 'string', format: 'date-time' },
          },
        }),
        400: INVALID_QUERY,
        404: error('No such device in your project (`not_found`); a foreign device answers the same.'),
      },
    }),
  ],
  [
    'get',
    '/v1/devices/:publicId/telemetry',
    secured('telemetry:read', {
      summary: 'History of a device: pre-aggregated buckets, or raw readings',
      description:
        'Buckets whose start lies in [from, to), oldest first, capability by capability; empty buckets are ' +
        'absent. Counters never use avg or sum; `aggregation` says what was used. docs/telemetry.md.',
      parameters: [
        { name: 'publicId', in: 'path', required: true, schema: { type: 'string' } },
        ...queryParameters(telemetryQuerySchema),
      ],
      responses: {
        200: ok('Telemetry', 'The points.'),
        400: error('Bad query (`invalid_query`, with `reason` and `parameter`).'),
        404: error('No such device in your project (`not_found`); a foreign device answers the same.'),
      },
    }),
  ],
  ...pairingOperations(),
  [
    'get',
    '/v1/live',
    secured('telemetry:live', {
      summary: 'Live stream (Server-Sent Events)',
      description:
        'Bearer header only. `retry: 5000` first, then frames (`id`, `event`, `data` as one line of JSON) and ' +
        'a `: ping` comment every heartbeat. `Last-Event-ID` (or lastEventId) resumes strictly after that ' +
        'frame. Frame ids are opaque and sealed for your project: the same frame keeps its id, ids are not ' +
        "ordered, and another project's id is unknown_id. HEAD answers the same headers without opening " +
        'a stream. The data of each event type is the schema named in x-sse-events. docs/api.md, "Live stream".',
      parameters: [
        ...queryParameters(liveQuerySchema),
        {
          name: 'Last-Event-ID',
          in: 'header',
          required: false,
          description: 'Resume strictly after this frame id; wins over lastEventId.',
          schema: { type: 'string' },
        },
      ],
      'x-sse-events': Object.fromEntries(Object.keys(LIVE_FRAME_SCHEMAS).map((e) => [e, ref(frameId(e))])),
      responses: {
        200: {
          description: 'The stream, until the client leaves or a stream_error frame ends it.',
          headers: STREAM_HEADERS,
          content: {
            'text/event-stream': {
              schema: {
                type: 'string',
                description: 'Server-Sent Events; the `data` of each frame is one line of JSON, a LiveFrame.',
                contentSchema: ref('LiveFrame'),
              },
            },
          },
        },
        429: {
          ...RATE_LIMITED,
          description:
            'Rate limit exceeded, or too many open streams for this client (`too_many_streams`, with `limit`).',
        },
        400: LIVE_BAD_QUERY,
      },
    }),
  ],
  [
    'head',
    '/v1/live',
    secured('telemetry:live', {
      summary: "The live stream's headers, without a stream",
      description:
        'Checked as GET is (token, scope, query). Answers the headers GET begins its stream with and no ' +
        'body; opens no stream and holds no slot, so it never answers too_many_streams.',
      parameters: queryParameters(liveQuerySchema),
      responses: {
        200: {
          description: 'As a stream begins: `Content-Type: text/event-stream`; no body.',
          headers: STREAM_HEADERS,
        },
        400: LIVE_BAD_QUERY,
      },
    }),
  ],
  ...controlOperations(),
];

/** "GET /v1/devices/:publicId" for each documented operation, as express declares its routes. */
export const DOCUMENTED_ROUTES: readonly string[] = OPERATIONS.map(([m, p]) => `${m.toUpperCase()} ${p}`);

/**
 * The server docs/openapi.json names, a reserved name (RFC 2606) that resolves nowhere: the checked-in
 * document belongs to no deployment. GET /openapi.json names its own deployment's PUBLIC_BASE_URL.
 */
export const PLACEHOLDER_BASE_URL = 'https://device-cloud.invalid';

/** The document for a deployment reached at `publicBaseUrl` (its servers and token URL). */
export function openApiDocument(publicBaseUrl: string = PLACEHOLDER_BASE_URL): Json {
  const base = publicBaseUrl.replace(/\/+$/, '');
  const paths: Record<string, Json> = {};
  for (const [method, expressPath, operation] of OPERATIONS) {
    const path = expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const key = `${method.toUpperCase()} ${expressPath}`;
    const described = { operationId: OPERATION_IDS[key], ...withEdgeAnswers(operation as Operation) };
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
          anyOf: Object.keys(LIVE_FRAME_SCHEMAS).map((e) => ref(frameId(e))),
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

/** Names by which generated clients call each operation, keyed as express declares the route. */
const OPERATION_IDS: Readonly<Record<string, string>> = {
  'GET /health': 'getHealth',
  'GET /openapi.json': 'getOpenApiDocument',
  [`GET ${METADATA_PATH}`]: 'getAuthorizationServerMetadata',
  'POST /v1/oauth/token': 'issueAccessToken',
  'GET /v1/devices': 'listDevices',
  'GET /v1/devices/:publicId': 'getDevice',
  'GET /v1/sites': 'listSites',
  'GET /v1/catalog/capabilities': 'getCapabilityCatalogue',
  'POST /v1/bindings': 'createBinding',
  'GET /v1/bindings': 'listBindings',
  'GET /v1/devices/:publicId/state': 'getDeviceState',
  'GET /v1/devices/:publicId/telemetry': 'getDeviceTelemetry',
  'POST /v1/pairing/sessions': 'openPairingSession',
  'GET /v1/pairing/sessions/:id': 'getPairingSession',
  'DELETE /v1/pairing/sessions/:id': 'closePairingSession',
  'POST /v1/pairing/sessions/:id/adopt': 'adoptPairingCandidate',
  'POST /v1/pairing/sessions/:id/reject': 'rejectPairingCandidate',
  'GET /v1/live': 'openLiveStream',
  'HEAD /v1/live': 'checkLiveStream',
  'PUT /v1/devices/:publicId/capability-grants': 'setCapabilityGrant',
  'GET /v1/devices/:publicId/capability-grants': 'listCapabilityGrants',
  'POST /v1/devices/:publicId/commands': 'sendCommand',
  'GET /v1/commands/:commandId': 'getCommand',
  'GET /v1/devices/:publicId/commands': 'listDeviceCommands',
};

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

/** Drops what JSON Schema generation adds for standalone use, and zod's long date-time regex (format says it). */
function clean(schema: Json): Json {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return JSON.parse(
    JSON.stringify(rest, (_key, value: unknown) => {
      if (value && typeof value === 'object' && (value as Json).format === 'date-time') {
        const { pattern: _pattern, ...withoutPattern } = value as Json;
        return withoutPattern;
      }
      return value;
    }),
  ) as Json;
}

/** The checked-in form, docs/openapi.json: two-space JSON and a final newline. */
export const renderOpenApi = () => JSON.stringify(openApiDocument(), null, 2) + '\n';

/** /v1/pairing/sessions: decisions the spec leaves open are in docs/pairing.md. */
function pairingOperations(): (readonly [string, string, Json])[] {
  const sessionPath = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
  const missingSession = {
    ...error('No such pairing session in your project (`not_found`); a foreign session answers the same.'),
    headers: { 'Cache-Control': header('NoStore') },
  };
  const candidateBody = {
    required: true,
    content: { 'application/json': { schema: ref('CandidateRequest') } },
  };
  return [
    [
      'post',
      '/v1/pairing/sessions',
      secured('devices:write', {
        summary: 'Open a pairing window on a hub',
        description:
          "The hub's agent is told to permit joining until closesAt; the window then closes itself. One open " +
          "window per hub: a second open answers 409 with the open window's sessionId.",
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('PairingSessionRequest') } },
        },
        responses: {
          201: ok('PairingSessionBody', 'The open window.'),
          404: error('No such hub in your project (`not_found`); a foreign hub answers the same.'),
          409: error(
            'A window is open on the hub: `{"error":"conflict","reason":"pairing_window_open","sessionId":...}`; ' +
              'or the hub is not active (`hub_not_active`).',
          ),
          422: error('durationSeconds out of range (`invalid_value`), or a body that does not fit.'),
        },
      }),
    ],
    [
      'get',
      '/v1/pairing/sessions/:id',
      secured('devices:write', {
        summary: 'The window and every candidate that joined it',
        parameters: [sessionPath],
        responses: { 200: ok('PairingSessionBody', 'The window and its candidates.'), 404: missingSession },
      }),
    ],
    [
      'delete',
      '/v1/pairing/sessions/:id',
      secured('devices:write', {
        summary: 'Close the window now',
        description:
          'The agent is told to stop permitting joins. Closing a closed window answers it unchanged.',
        parameters: [sessionPath],
        responses: { 200: ok('PairingSessionBody', 'The closed window.'), 404: missingSession },
      }),
    ],
    [
      'post',
      '/v1/pairing/sessions/:id/adopt',
      secured('devices:write', {
        summary: 'Adopt a candidate: it becomes a device with a public id',
        description:
          'The device is a child of the hub, in its site, status active, profile draft. Every writable ' +
          'capability starts with an explicit write denial and is listed in write_blocked.',
        parameters: [sessionPath],
        requestBody: candidateBody,
        responses: {
          201: ok('Adoption', 'The new device (as GET /v1/devices/{publicId}) and write_blocked.'),
          404: error('No such session, or no such candidate in it (`not_found`).'),
          409: error('The candidate is not pending (`candidate_not_pending`, with its `state`).'),
          422: error('ieeeAddr missing or malformed.'),
        },
      }),
    ],
    [
      'post',
      '/v1/pairing/sessions/:id/reject',
      secured('devices:write', {
        summary: 'Refuse a candidate; the record is kept and the hub keeps refusing that device',
        parameters: [sessionPath],
        requestBody: candidateBody,
        responses: {
          200: ok('PairingCandidateBody', 'The refused candidate.'),
          404: error('No such session, or no such candidate in it (`not_found`).'),
          409: error('The candidate is not pending (`candidate_not_pending`, with its `state`).'),
          422: error('ieeeAddr missing or malformed.'),
        },
      }),
    ],
  ];
}

function controlOperations(): (readonly [string, string, Json])[] {
  const devicePath = { name: 'publicId', in: 'path', required: true, schema: { type: 'string' } };
  const missingDevice = error(
    'No such device in your project (`not_found`); a foreign device answers the same.',
  );
  const contended = {
    description:
      'Too many concurrent writes on the device (`contention`); nothing was recorded. Retry after Retry-After.',
    headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait.' } },
    content: { 'application/json': { schema: ref('Error') } },
  };
  const commandPost = secured('commands:write', {
    summary: 'Send a command to a writable capability, behind the safety gate',
    description:
      'Answered 201 once validated, recorded and queued (not proof that the hardware acted). Refusals are 403 ' +
      'with reasons[] (closed list: docs/commands.md); S3 needs commands:high_risk and a two-step challenge.',
    parameters: [devicePath, idempotencyKeyHeader('content (device, capability, value, mode, ttlSeconds)')],
    requestBody: { required: true, content: { 'application/json': { schema: ref('CommandRequest') } } },
    responses: {
      201: ok('CommandAnswer', 'Accepted and queued (also on an idempotent replay: the same commandId).'),
      409: error('The idempotency key was used with other content (`conflict`, `idempotency_key_reused`).'),
      422: error(
        'A body that does not fit (`invalid_request`; a challengeId on an S1/S2 command is ' +
          '`challenge_not_applicable`), or a value that fails the capability (`invalid_value`) when no policy reason stands.',
      ),
      503: contended,
    },
  }) as Json & { responses: Json };
  commandPost.responses = {
    ...commandPost.responses,
    403: error(
      'Without reasons: the token lacks commands:write, or commands:high_risk for an S3 capability. With ' +
        'reasons[]: a safety refusal; a missing or foreign device is `device_not_addressable` (never 404). A first ' +
        'S3 request that passes everything else answers `["challenge_required"]` and `challenge {challengeId, expiresAt}`; ' +
        'the answer must repeat that exact command (`challenge_mismatch`) before any grant, profile or lifecycle ' +
        'change of the device (`challenge_voided`).',
    ),
  };
  const grantPut = secured('grants:revoke', {
    summary: 'Enable (write true, grants:admin) or revoke (write false, grants:revoke) one write grant',
    description:
      'S2 and S3 need a verified profile (409 `profile_not_verified` otherwise, nothing recorded); S1 may be ' +
      'enabled on a draft profile. A revoke cancels the pending commands of the pair. Repeating a change records nothing.',
    parameters: [devicePath],
    requestBody: { required: true, content: { 'application/json': { schema: ref('GrantRequest') } } },
    responses: {
      200: ok('GrantAnswer', 'The grant as it now stands.'),
      404: missingDevice,
      409: error(
        '`profile_not_verified` (S2/S3 on a draft profile) or `device_lifecycle` (revoked or retired device).',
      ),
      422: error(
        'Unknown capability, read-only capability, or one the device does not have (`invalid_value`).',
      ),
      503: contended,
    },
  }) as Json & { responses: Json };
  grantPut.responses = {
    ...grantPut.responses,
    403: error('The token lacks grants:revoke, or grants:admin to enable (`forbidden`, no reasons).'),
  };
  return [
    ['put', '/v1/devices/:publicId/capability-grants', grantPut],
    [
      'get',
      '/v1/devices/:publicId/capability-grants',
      secured('devices:read', {
        summary: 'Every writable capability of the device with its grant state, who changed it last and when',
        parameters: [devicePath],
        responses: {
          200: ok('GrantList', 'One entry per writable capability.'),
          400: INVALID_QUERY,
          404: missingDevice,
        },
      }),
    ],
    ['post', '/v1/devices/:publicId/commands', commandPost],
    [
      'get',
      '/v1/commands/:commandId',
      secured('commands:read', {
        summary: 'One command and its current status',
        parameters: [{ name: 'commandId', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          200: ok('CommandAnswer', 'The command.'),
          400: INVALID_QUERY,
          404: error('No such command in your project (`not_found`); a foreign command answers the same.'),
        },
      }),
    ],
    [
      'get',
      '/v1/devices/:publicId/commands',
      secured('commands:read', {
        summary: "A page of a device's commands, in acceptance order",
        description: 'Filters combine. Follow nextCursor, with the same filters, until it is absent.',
        parameters: [devicePath, ...queryParameters(commandListQuerySchema)],
        responses: {
          200: ok('CommandList', 'A page of commands.'),
          400: error('Bad query (`invalid_query`, with `reason` and `parameter`), `from_after_to` included.'),
          404: missingDevice,
        },
      }),
    ],
  ];
}
