import type { ErrorRequestHandler, RequestHandler } from 'express';
import { Conflict, DomainError, InvalidInput, NotFound, Refusal } from '../domain/errors.js';
import { EventStoreUnavailableError } from '../eventstore/port.js';

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

export const invalidQuery = (reason: string) => new HttpProblem(400, 'invalid_query', { reason });
export const unauthenticated = (headers: Record<string, string> = { 'WWW-Authenticate': 'Bearer' }) =>
  new HttpProblem(401, 'unauthorized', {}, headers);
export const missingScope = () => new HttpProblem(403, 'forbidden');
export const notFound = () => new HttpProblem(404, 'not_found');

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
  if (error instanceof EventStoreUnavailableError) {
    return { status: 503, body: { error: 'transport_unavailable' }, headers: { 'Retry-After': '5' } };
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

function domainToHttp(error: DomainError): HttpAnswer {
  if (error instanceof Refusal)
    return { status: 403, body: { error: 'forbidden', reasons: [...error.reasons] }, headers: {} };
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
  if (answer.status >= 500) req.log?.error({ err: error }, 'request failed');
  if (res.headersSent) return res.end();
  res.status(answer.status).set(answer.headers).json(answer.body);
};

export const unknownRoute: RequestHandler = (_req, _res, next) => next(notFound());
