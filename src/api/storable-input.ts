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
 *   (no NUL, no lone surrogate): 400 invalid_query / 422 invalid_request, reason `invalid_text`.
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
  const field = unstorableField(req.body, '');
  if (field !== undefined) return next(new InvalidInput('invalid_text', field || undefined));
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

/** The path of the first string (or key) in `value` that cannot be stored, or undefined when there is none. */
function unstorableField(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : path;
  if (typeof value !== 'object' || value === null) return undefined;
  for (const [key, inner] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (!isStorableText(key)) return at;
    const found = unstorableField(inner, at);
    if (found !== undefined) return found;
  }
  return undefined;
}
