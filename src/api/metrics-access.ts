import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { notFound, unauthenticated } from './http-errors.js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * GET /metrics is for our own scraper, not the public: it answers only to `Authorization: Bearer
 * <METRICS_TOKEN>`, and does not exist (404) when no METRICS_TOKEN is configured.
 */
export function metricsAccess(token: string | undefined): RequestHandler {
  const expected = token === undefined ? undefined : digest(token);
  return (req, _res, next) => {
    if (!expected) return next(notFound());
    const presented = /^Bearer +(\S+) *$/i.exec(req.get('authorization') ?? '')?.[1];
    // Comparing digests keeps the comparison constant-time whatever the presented length.
    if (!presented || !timingSafeEqual(digest(presented), expected)) {
      return next(unauthenticated({ 'WWW-Authenticate': 'Bearer realm="device-cloud-metrics"' }));
    }
    next();
  };
}
