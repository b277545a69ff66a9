import type { IncomingHttpHeaders } from 'node:http';
import express, { type RequestHandler } from 'express';
import { unsupportedMediaType } from './http-errors.js';

/** Request bodies of the JSON API are small (a binding, a command); 64 kB leaves room and bounds parsing. */
export const JSON_BODY_LIMIT = '64kb';
const JSON_TYPES = ['application/json', 'application/*+json'];
const parseJson = express.json({ limit: JSON_BODY_LIMIT, strict: true, type: JSON_TYPES, inflate: false });

/** A request without Content-Length (or 0) and without Transfer-Encoding has no body. */
const hasBody = (headers: IncomingHttpHeaders) => {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
};

/**
 * Bodies are read as sent, never decompressed: our bodies are small, and a compressed one would only make
 * the server inflate what a client chose to send. Any Content-Encoding but identity is 415.
 */
const encoded = (headers: IncomingHttpHeaders) => {
  const encoding = headers['content-encoding']?.trim().toLowerCase();
  return encoding !== undefined && encoding !== '' && encoding !== 'identity';
};

/** For routes that parse their own body (the token endpoint's form): 415 for an encoded one. */
export const unencodedBody: RequestHandler = (req, _res, next) =>
  next(hasBody(req.headers) && encoded(req.headers) ? unsupportedMediaType() : undefined);

/**
 * Parses a JSON body where there is one. A body of any other media type, or encoded, is refused with 415
 * before it is read; a request without a body passes untouched.
 */
export const jsonBody: RequestHandler = (req, res, next) => {
  if (!hasBody(req.headers)) return next();
  if (encoded(req.headers) || !req.is(JSON_TYPES)) return next(unsupportedMediaType());
  parseJson(req, res, next);
};
