import type { RequestHandler } from 'express';
import { InvalidInput } from '../domain/errors.js';
import { isPublicId, isStorableText } from '../domain/text.js';
import { HttpProblem, notFound } from './http-errors.js';
import { queryProblem } from './validation.js';

/**
 * The one string check at the HTTP edge (src/domain/text.ts), for every /v1 route after authentication:
 * - each path segment is a route word or a public id, `^[A-Za-z0-9_-]{1,64}$`; anything else names nothing
 *   and is 404 (a NUL in a path id used to reach PostgreSQL and answer 500);
 * - each query value and each string of a JSON body, keys included, must be text PostgreSQL can store
 *   (no NUL, no lone surrogate): 400 invalid_query / 422 invalid_request, reason `invalid_text`;
 * - a JSON body nests at most MAX_BODY_DEPTH arrays and objects: 422 invalid_request, reason `too_deep`.
 *   JSON.parse takes any depth, but the routes' schemas walk a body recursively; nothing below sees one
 *   this check has not walked, without recursion, first.
 */
export const storableInput: RequestHandler = (req, _res, next) => {
  for (const segment of req.path.split('/').filter((s) => s !== '')) {
    const text = decoded(segment);
    if (text === undefined) return next(new HttpProblem(400, 'invalid_request'));
    if (!isPublicId(text)) return next(notFound());
  }
  for (const [name, value] of Object.entries((req.query ?? {}) as Record<string, unknown>)) {
    const values = Array.isArray(value) ? value : [value];
    if (!isStorableText(name) || values.some((v) => typeof v === 'string' && !isStorableText(v))) {
      return next(queryProblem('invalid_text', name));
    }
  }
  const problem = bodyProblem(req.body);
  if (problem === 'too_deep') {
    return next(new HttpProblem(422, 'invalid_request', { reason: 'too_deep', maxDepth: MAX_BODY_DEPTH }));
  }
  if (problem !== undefined) return next(new InvalidInput('invalid_text', problem.field || undefined));
  next();
};

/** req.path is still %-encoded; a malformed escape decodes to nothing (400, as express answers it). */
function decoded(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * Arrays and objects a JSON body may nest (`{"a":[1]}` nests 2). Our bodies nest 2 at most; 32 leaves
 * clients room and keeps a walk over the body, theirs or ours, far from any stack limit.
 */
export const MAX_BODY_DEPTH = 32;

interface Pending {
  readonly value: unknown;
  /** The key or index that leads to `value` from its parent; undefined for the body itself. */
  readonly key?: string;
  readonly path: string;
  /** Arrays and objects around `value`. */
  readonly depth: number;
}

/**
 * The body's first string (or key), in document order, that cannot be stored, or `too_deep` where it nests
 * beyond MAX_BODY_DEPTH. An explicit stack rather than recursion: the body may be deeper than the call stack.
 */
function bodyProblem(body: unknown): { field: string } | 'too_deep' | undefined {
  const pending: Pending[] = [{ value: body, path: '', depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, key, path, depth } = next;
    if (key !== undefined && !isStorableText(key)) return { field: path };
    if (typeof value === 'string') {
      if (!isStorableText(value)) return { field: path };
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth === MAX_BODY_DEPTH) return 'too_deep';
    const entries = Object.entries(value);
    // Last first, so the stack hands them back in document order.
    for (let i = entries.length - 1; i >= 0; i -= 1) {
      const [innerKey, inner] = entries[i]!;
      pending.push({
        value: inner,
        key: innerKey,
        path: path ? `${path}.${innerKey}` : innerKey,
        depth: depth + 1,
      });
    }
  }
  return undefined;
}
