import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { redactSecrets, type Logger } from '../infra/logger.js';
import type { Metrics } from '../infra/metrics.js';

declare module 'express-serve-static-core' {
  interface Request {
    id: string;
    log: Logger;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Gives each request an id (the caller's X-Request-Id when well-formed), a child logger and metrics. */
export function requestContext(logger: Logger, metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const offered = req.get('x-request-id');
    req.id = offered && REQUEST_ID.test(offered) ? offered : randomUUID();
    req.log = logger.child({ requestId: req.id });
    res.set('X-Request-Id', req.id);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const route = (req.route?.path as string | undefined) ?? 'unmatched';
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
      metrics.httpDuration.observe({ method: req.method, route }, seconds);
      // The path only, never the query string; and a client may have put a token into the path itself.
      const path = redactSecrets(req.path);
      req.log.info(
        { method: req.method, path, status: res.statusCode, ms: Math.round(seconds * 1000) },
        'request',
      );
    });
    next();
  };
}
