import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { CAPABILITY_KEYS, isCapabilityKey } from '../../domain/catalogue/index.js';
import type { Logger } from '../../infra/logger.js';
import type { LiveStreamMetrics } from '../../infra/metrics.js';
import type { TokenRevocations } from '../auth/index.js';
import { REVOKED_CLIENTS_TTL_MS } from '../auth/revoked-clients.js';
import { requireScope } from '../auth/require-scope.js';
import { HttpProblem } from '../http-errors.js';
import { parseQuery } from '../validation.js';
import { LIVE_TYPES, type LiveType } from './frames.js';
import type { LiveHub } from './hub.js';
import { StreamSlots, type StreamSlotPool } from './slots.js';
import { LiveStream, STREAM_HEADERS, type LiveFilter } from './stream.js';
import { LIVE_FRAME_SCHEMAS } from './wire.js';
import {
  liveFrameId,
  ref,
  error,
  secured,
  RATE_LIMITED,
  queryParameters,
  type OperationDeclaration,
} from '../openapi/operation.js';

const HEARTBEAT_SECONDS = { min: 15, max: 120, default: 30 } as const;
const MAX_DEVICE_IDS = 500;

const liveQuerySchema = z.strictObject({
  types: z
    .string()
    .max(200)
    .optional()
    .meta({
      description: `Comma-separated frame types: ${LIVE_TYPES.join(', ')}. Default: all of them.`,
    }),
  deviceIds: z
    .string()
    .max(40_000)
    .optional()
    .meta({
      description:
        `Comma-separated device public ids (at most ${MAX_DEVICE_IDS}); a hub's id also selects its ` +
        'pairing_update frames. Ids not in your project simply never match. Default: every device.',
    }),
  capabilities: z.string().max(4096).optional().meta({
    description:
      'Comma-separated catalogue keys: narrows telemetry and command_update frames; other types pass.',
  }),
  heartbeat: z
    .string()
    .regex(/^\d{1,9}$/, 'invalid_heartbeat')
    .transform(Number)
    .pipe(z.number().int().min(0).max(999_999_999))
    .optional()
    .meta({
      description:
        `Seconds between \`: ping\` comment lines, clamped to ${HEARTBEAT_SECONDS.min}..` +
        `${HEARTBEAT_SECONDS.max}. Default ${HEARTBEAT_SECONDS.default}.`,
    }),
  lastEventId: z.string().max(200).optional().meta({
    description: 'Resume strictly after this frame id. The Last-Event-ID header wins when both are sent.',
  }),
});

/** Query parameter names that carry credentials by convention (RFC 6750 §2.3 and its imitators). */
const TOKEN_PARAMETERS = new Set([
  'access_token',
  'token',
  'bearer',
  'authorization',
  'auth',
  'jwt',
  'id_token',
]);
const JWT_SHAPE = /^eyJ[\w-]*\.[\w-]+\.[\w-]*$/;

/**
 * Mounted ahead of authentication: a token in the query string never authenticates, whether or not a
 * header comes with it, and the answer says so (it is already in somebody's logs: the client must fix it).
 */
export const refuseTokenInQuery: RequestHandler = (req, _res, next) => {
  const params = new URLSearchParams(req.originalUrl.split('?')[1] ?? '');
  for (const [name, value] of params) {
    if (TOKEN_PARAMETERS.has(name.toLowerCase()) || JWT_SHAPE.test(value)) {
      return next(
        new HttpProblem(400, 'invalid_query', {
          reason: 'token_in_query_string',
          parameter: name,
          detail: 'Access tokens are accepted only in the Authorization: Bearer header.',
        }),
      );
    }
  }
  next();
};

export interface LiveRouteOptions {
  readonly hub: LiveHub;
  readonly logger: Logger;
  readonly maxStreamsPerClient: number;
  /** Counts streams across the API processes (CLUSTER_REDIS_URL); absent: in this process. */
  readonly slots?: StreamSlotPool;
  readonly maxBufferedBytes: number;
  readonly stallMs: number;
  /**
   * Revoked clients and signing keys: a stream whose token's client or key is revoked ends within the
   * cache's staleness (5 s for clients, SIGNING_KEY_REFRESH_MS for keys) plus one sweep (REVOKED_CLIENTS_TTL_MS).
   */
  readonly revocations?: TokenRevocations;
  readonly now: () => number;
  readonly metrics?: LiveStreamMetrics;
}

/** GET /live (mounted under /v1): the SSE stream, and HEAD for its headers. docs/api.md, "Live stream". */
export function liveRoutes(options: LiveRouteOptions): Router {
  const slots = options.slots ?? new StreamSlots(options.maxStreamsPerClient);
  const revocations = options.revocations
    ? new RevocationSweep(options.revocations, options.logger)
    : undefined;
  const router = Router();
  // Express would answer HEAD with the GET handler: a stream that takes a slot and never shows its headers.
  // HEAD is checked as GET is (token, scope, query) and answers the headers of the stream GET would open,
  // without opening one or taking a slot (so never 429: it holds nothing).
  router.head('/live', requireScope('telemetry:live'), (req, res) => {
    parseFilter(parseQuery(liveQuerySchema, req.query));
    res.writeHead(200, STREAM_HEADERS).end();
  });
  router.get('/live', requireScope('telemetry:live'), async (req, res) => {
    const query = parseQuery(liveQuerySchema, req.query);
    const filter = parseFilter(query);
    const heartbeatMs = clampHeartbeat(query.heartbeat) * 1000;
    const lastEventId = req.get('last-event-id')?.trim() || query.lastEventId;
    const principal = req.principal!;
    const slot = await slots.take(principal.clientId);
    if (!slot) {
      throw new HttpProblem(
        429,
        'rate_limited',
        { reason: 'too_many_streams', limit: slots.limit },
        { 'Retry-After': '5' },
      );
    }
    // Counting across processes goes to Redis: the client may have gone meanwhile, and no close would come.
    if (res.destroyed) {
      slot.release();
      return;
    }
    const stream = new LiveStream(res, {
      projectId: principal.projectId,
      clientId: principal.clientId,
      keyId: principal.keyId,
      filter,
      heartbeatMs,
      maxBufferedBytes: options.maxBufferedBytes,
      stallMs: options.stallMs,
      expiresAtMs: principal.expiresAt * 1000,
      now: options.now,
      metrics: options.metrics,
      onClose: (s) => {
        slot.release();
        revocations?.forget(s);
        options.hub.detach(s);
      },
    });
    stream.open();
    revocations?.watch(stream);
    try {
      await options.hub.serve(stream, lastEventId);
    } catch (error) {
      req.log.warn({ err: error }, 'live stream failed');
      stream.end('unavailable');
    }
  });
  return router;
}

/**
 * A stream outlives the request that authenticated it: every REVOKED_CLIENTS_TTL_MS each open stream's token
 * is checked again, its client against the revoked list and the key that signed it against the live keys,
 * and a stream whose client or key was revoked ends with `stream_error token_revoked` (the token's next
 * request gets 401). The timer runs only while streams are open.
 */
class RevocationSweep {
  readonly #streams = new Set<LiveStream>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly revocations: TokenRevocations,
    private readonly logger: Logger,
  ) {}

  watch(stream: LiveStream): void {
    if (stream.closed) return;
    this.#streams.add(stream);
    this.#timer ??= setInterval(() => void this.#sweep(), REVOKED_CLIENTS_TTL_MS);
  }

  forget(stream: LiveStream): void {
    this.#streams.delete(stream);
    if (this.#streams.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  async #sweep(): Promise<void> {
    for (const stream of [...this.#streams]) {
      try {
        if (await this.revocations.revoked(stream)) stream.end('token_revoked');
      } catch (error) {
        // The list could not be read (database down): the next sweep tries again; the stream stays.
        this.logger.debug({ err: error }, 'revocation sweep failed');
        return;
      }
    }
  }
}

function clampHeartbeat(seconds: number | undefined): number {
  if (seconds === undefined) return HEARTBEAT_SECONDS.default;
  return Math.min(HEARTBEAT_SECONDS.max, Math.max(HEARTBEAT_SECONDS.min, seconds));
}

function parseFilter(query: z.output<typeof liveQuerySchema>): LiveFilter {
  const types = list(query.types, 'types');
  const unknownTypes = types?.filter((t) => !(LIVE_TYPES as readonly string[]).includes(t)) ?? [];
  if (unknownTypes.length > 0) throw invalidFilter('unknown_type', 'types', unknownTypes, LIVE_TYPES);
  const capabilities = list(query.capabilities, 'capabilities');
  const unknownCapabilities = capabilities?.filter((c) => !isCapabilityKey(c)) ?? [];
  if (unknownCapabilities.length > 0)
    throw invalidFilter('unknown_capability', 'capabilities', unknownCapabilities, CAPABILITY_KEYS);
  const deviceIds = list(query.deviceIds, 'deviceIds');
  if (deviceIds && deviceIds.length > MAX_DEVICE_IDS)
    throw new HttpProblem(400, 'invalid_query', { reason: 'too_many_values', parameter: 'deviceIds' });
  return {
    types: new Set((types ?? LIVE_TYPES) as LiveType[]),
    deviceIds: deviceIds && new Set(deviceIds),
    capabilities: capabilities && new Set(capabilities),
  };
}

function list(value: string | undefined, parameter: string): string[] | undefined {
  if (value === undefined) return undefined;
  const items = [...new Set(value.split(',').map((s) => s.trim()))];
  if (items.includes('')) throw new HttpProblem(400, 'invalid_query', { reason: 'empty_value', parameter });
  return items;
}

function invalidFilter(reason: string, parameter: string, invalid: string[], valid: readonly string[]) {
  return new HttpProblem(400, 'invalid_filter', { reason, parameter, invalid, valid: [...valid] });
}

const STREAM_ANSWER_HEADERS = {
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

/** The OpenAPI operations of these routes (document.ts assembles them). */
export const liveOperations: readonly OperationDeclaration[] = [
  [
    'get',
    '/v1/live',
    secured('telemetry:live', {
      operationId: 'openLiveStream',
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
      'x-sse-events': Object.fromEntries(
        Object.keys(LIVE_FRAME_SCHEMAS).map((e) => [e, ref(liveFrameId(e))]),
      ),
      responses: {
        200: {
          description: 'The stream, until the client leaves or a stream_error frame ends it.',
          headers: STREAM_ANSWER_HEADERS,
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
      operationId: 'checkLiveStream',
      summary: "The live stream's headers, without a stream",
      description:
        'Checked as GET is (token, scope, query). Answers the headers GET begins its stream with and no ' +
        'body; opens no stream and holds no slot, so it never answers too_many_streams.',
      parameters: queryParameters(liveQuerySchema),
      responses: {
        200: {
          description: 'As a stream begins: `Content-Type: text/event-stream`; no body.',
          headers: STREAM_ANSWER_HEADERS,
        },
        400: LIVE_BAD_QUERY,
      },
    }),
  ],
];
