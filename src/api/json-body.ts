import express, { type RequestHandler } from 'express';
import { HttpProblem } from './http-errors.js';

/** Request bodies of the JSON API are small (a binding, a command); 64 kB leaves room and bounds parsing. */
export const JSON_BODY_LIMIT = '64kb';
const JSON_TYPES = ['application/json', 'application/*+json'];
const parseJson = express.json({ limit: JSON_BODY_LIMIT, strict: true, type: JSON_TYPES });

/**
 * Parses a JSON body where there is one. A body of any other media type is refused with 415 before it is
 * read; a request without a body (no Content-Length, or 0, and no Transfer-Encoding) passes untouched.
 */
export const jsonBody: RequestHandler = (req, res, next) => {
  const length = req.headers['content-length'];
  const hasBody = req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  if (!hasBody) return next();
  if (!req.is(JSON_TYPES)) return next(new HttpProblem(415, 'unsupported_media_type'));
  parseJson(req, res, next);
};
