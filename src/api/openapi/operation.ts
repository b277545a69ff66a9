import { z } from 'zod';
import type { ScopeName } from '../../domain/identity/index.js';

/**
 * The vocabulary each route file declares its OpenAPI operations in, beside the route and from the same
 * zod schemas; document.ts assembles them and adds what the edge answers on every operation.
 */
export type Json = Record<string, unknown>;

/** Method, path as express declares it from the API root, and the operation (with its operationId). */
export type OperationDeclaration = readonly [method: string, path: string, operation: Json];

/** A component schema by the id document.ts registers it under. */
export const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** The component id of a live frame's data schema, by its event name. */
export const liveFrameId = (event: string) => `LiveFrame_${event}`;

/** A header described once in components/headers. */
export const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

export const error = (description: string) => ({
  description,
  content: { 'application/json': { schema: ref('Error') } },
});

/** A JSON answer; `no-store` unless it says how it may be cached. */
export const ok = (id: string, description: string, headers: Json = {}) => ({
  description,
  headers: { 'Cache-Control': header('NoStore'), ...headers },
  content: { 'application/json': { schema: ref(id) } },
});

/** A required JSON request body. */
export const jsonBody = (id: string) => ({
  required: true,
  content: { 'application/json': { schema: ref(id) } },
});

export const pathParameter = (name: string) => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string' },
});

/** A bearer-authenticated operation: the scope it needs, and the 403 of a token without it. */
export function secured(scope: ScopeName, operation: Json & { responses: Json }): Json & { responses: Json } {
  return {
    ...operation,
    security: [{ oauth2: [scope] }],
    responses: {
      ...operation.responses,
      403: error(`The token lacks ${scope} (\`forbidden\`, no reasons).`),
    },
  };
}

/**
 * A write decided on a device's stream behind the safety gate: its 403 says more than a missing scope (policy
 * refusals, a scope that depends on the body), and a stream too contended to append to answers 503.
 */
export function gatedWrite(scope: ScopeName, operation: Json & { responses: Json }, forbidden: string): Json {
  const declared = secured(scope, operation);
  return { ...declared, responses: { ...declared.responses, 403: error(forbidden), 503: CONTENDED } };
}

export const PUBLIC_HOUR = {
  'Cache-Control': { description: '`public, max-age=3600`.', schema: { type: 'string' } },
};

export const INVALID_QUERY = error(
  'Unknown, repeated or malformed query parameter (`invalid_query`, with `parameter`).',
);

export const NO_SUCH_DEVICE = error(
  'No such device in your project (`not_found`); a foreign device answers the same.',
);

export const RATE_LIMITED = {
  description: 'Rate limit exceeded (30 requests/s per IP, burst 60) (`rate_limited`).',
  headers: { 'Retry-After': header('RetryAfter') },
  content: { 'application/json': { schema: ref('Error') } },
};

export const UNAVAILABLE = {
  description:
    'A dependency cannot be reached (`transport_unavailable`, Retry-After 5) or turned the request away ' +
    '(`temporarily_unavailable`, Retry-After 1); nothing was recorded.',
  headers: { 'Retry-After': header('RetryAfter') },
  content: { 'application/json': { schema: ref('Error') } },
};

const CONTENDED = {
  description:
    'Too many concurrent writes on the device (`contention`); nothing was recorded. Retry after Retry-After.',
  headers: { 'Retry-After': header('RetryAfter') },
  content: { 'application/json': { schema: ref('Error') } },
};

export const FAULT = error(
  'A fault of the service (`internal_error`); the answer says nothing more, the log does.',
);

/**
 * Query parameters from a route's strict query schema: name, optionality, description and JSON Schema. A
 * parameter the schema turns into a number (`limit`, `heartbeat`) is described by that number's type.
 */
export function queryParameters(schema: z.ZodObject): Json[] {
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

/** Drops what JSON Schema generation adds for standalone use, and zod's long date-time regex (format says it). */
export function clean(schema: Json): Json {
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
