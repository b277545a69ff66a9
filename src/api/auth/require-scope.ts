import type { RequestHandler } from 'express';
import { missingScope, unauthenticated } from '../http-errors.js';
import type { Scope } from './principal.js';

/**
 * Lets the request through only when the caller's token carries `scope`. The 403 names no reasons and no
 * scope: a 403 without reasons[] means, per the spec, that the token lacks a scope.
 */
export function requireScope(scope: Scope): RequestHandler {
  return (req, _res, next) => {
    if (!req.principal) return next(unauthenticated());
    if (!req.principal.scopes.has(scope)) return next(missingScope());
    next();
  };
}
