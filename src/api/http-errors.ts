import type { ErrorRequestHandler, RequestHandler } from 'express';
import { Conflict, DomainError, InvalidInput, MissingScope, NotFound, Refusal } from '../domain/errors.js';
import { EventStoreUnavailableError, StreamContendedError } from '../eventstore/port.js';
import { isBusyError, isConnectionError, isDataError } from '../infra/postgres/errors.js';

/**
 * Failures that only exist at the HTTP edge. Domain failures are the classes of src/domain/errors.ts;
 * `toHttp` below is the one place where either becomes a status and a body.
 */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly extra: Readonly<Record<string, unknown>> = {},
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(error);
  }
}

export const unauthenticated = (headers: Record<string, string> = { 'WWW-Authenticate': 'Bearer' }) =>
  new HttpProblem(401, 'unauthorized', {}, headers);
export const missingScope = () => new HttpProblem(403, 'forbidden');
export const notFound = () => new HttpProblem(404, 'not_found');
export const unsupportedMediaType = () => new HttpProblem(415, 'unsupported_media_type');

interface HttpAnswer {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

export function toHttp(error: unknown): HttpAnswer {
  if (error instanceof HttpProblem) {
    return {
      status: error.status,
      body: { error: error.error, ...error.extra },
      headers: { ...error.headers },
    };
  }
  if (error instanceof DomainError) return domainToHttp(error);
  if (error instanceof StreamContendedError) {
    // Too many writers on one device or hub at once: nothing was recorded, the same request may come again.
    return { status: 503, body: { error: 'contention' }, headers: { 'Retry-After': '1' } };
  }
  if (error instanceof EventStoreUnavailableError || isConnectionError(error)) return unavailable();
  // The database is up but turned this attempt away (out of connections, a deadlock): soon, not in 5 s.
  if (isBusyError(error)) {
    return { status: 503, body: { error: 'temporarily_unavailable' }, headers: { 'Retry-After': '1' } };
  }
  // The values themselves were refused (a NUL the input checks missed, an out-of-range value): the caller's.
  if (isDataError(error)) {
    return { status: 422, body: { error: 'invalid_request', reason: 'invalid_value' }, headers: {} };
  }
  const bodyParser = error as { type?: string; status?: number; statusCode?: number };
  if (bodyParser.type === 'entity.too.large')
    return { status: 413, body: { error: 'payload_too_large' }, headers: {} };
  if (bodyParser.type === 'entity.parse.failed') {
    return { status: 400, body: { error: 'invalid_request', reason: 'malformed_json' }, headers: {} };
  }
  if (bodyParser.type === 'encoding.unsupported' || bodyParser.type === 'charset.unsupported') {
    return { status: 415, body: { error: 'unsupported_media_type' }, headers: {} };
  }
  // Any other client error raised by express or body-parser (a bad %-escape in a path, too many form fields).
  const clientStatus = bodyParser.status ?? bodyParser.statusCode;
  if (typeof clientStatus === 'number' && clientStatus >= 400 && clientStatus < 500) {
    return clientStatus === 413
      ? { status: 413, body: { error: 'payload_too_large' }, headers: {} }
      : { status: 400, body: { error: 'invalid_request' }, headers: {} };
  }
  return { status: 500, body: { error: 'internal_error' }, headers: {} };
}

/** A dependency (the database, the event store) cannot be reached now: 503, come back in a few seconds. */
function unavailable(): HttpAnswer {
  return { status: 503, body: { error: 'transport_unavailable' }, headers: { 'Retry-After': '5' } };
}

function domainToHttp(error: DomainError): HttpAnswer {
  if (error instanceof MissingScope) return toHttp(missingScope());
  if (error instanceof Refusal)
    return {
      status: 403,
      body: { error: 'forbidden', reasons: [...error.reasons], ...error.details },
      headers: {},
    };
  if (error instanceof Conflict) {
    return { status: 409, body: { error: 'conflict', reason: error.reason, ...error.details }, headers: {} };
  }
  if (error instanceof InvalidInput) {
    const body: Record<string, unknown> = { error: error.errorCode, reason: error.reason };
    if (error.field) body.field = error.field;
    return { status: 422, body, headers: {} };
  }
  if (error instanceof NotFound) return { status: 404, body: { error: 'not_found' }, headers: {} };
  return { status: 500, body: { error: 'internal_error' }, headers: {} };
}

/** The last middleware: every error leaves as JSON, a server fault without its stack. */
export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  const answer = toHttp(error);
  // Contention is expected under load and answered with Retry-After: worth a warning, not an error.
  if (error instanceof StreamContendedError) req.log?.warn({ err: error }, 'stream contended');
  else if (answer.status >= 500) req.log?.error({ err: error }, 'request failed');
  if (res.headersSent) return res.end();
  res.status(answer.status).set(answer.headers).json(answer.body);
};

export const unknownRoute: RequestHandler = (_req, _res, next) => next(notFound());

/**
 * We serve no OPTIONS (no CORS: the API is for servers, not browsers). Left alone, express answers it
 * itself, 200 with an Allow header, wherever a route matches the path; it is refused instead as any method
 * we do not serve is: 404.
 */
export const refuseOptions: RequestHandler = (req, _res, next) =>
  next(req.method === 'OPTIONS' ? notFound() : undefined);
