import { z } from 'zod';
import { InvalidInput } from '../domain/errors.js';
import { HttpProblem } from './http-errors.js';

/**
 * Turns zod's first complaint into our error shape: a machine-readable reason code and the field it is
 * about. A schema may name the reason itself by giving a snake_case error message.
 */
function describeIssue(issue: z.core.$ZodIssue, input: unknown): { reason: string; field: string } {
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') path.push(issue.keys[0] ?? '');
  return {
    reason: REASON_CODE.test(issue.message) ? issue.message : reasonOf(issue, input),
    field: path.join('.'),
  };
}

const REASON_CODE = /^[a-z][a-z_]*$/;

function reasonOf(issue: z.core.$ZodIssue, input: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      return valueAt(input, issue.path) === undefined ? 'missing' : 'wrong_type';
    case 'too_small':
      if (issue.origin === 'string') return issue.minimum === 1 ? 'empty' : 'too_short';
      return 'too_small';
    case 'too_big':
      return issue.origin === 'string' ? 'too_long' : 'too_big';
    case 'unrecognized_keys':
      return 'unknown_field';
    case 'invalid_format':
      return 'invalid_format';
    default:
      return 'invalid_value';
  }
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

/** A JSON body checked against its schema; a failure is 422 invalid_request with reason and field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const { reason, field } = describeIssue(parsed.error.issues[0]!, body);
  throw new InvalidInput(reason, field || undefined);
}

/**
 * A query string checked against its schema. Unknown and repeated parameters are refused rather than
 * ignored: a misspelt filter silently ignored would answer with more than the caller asked for.
 */
export function parseQuery<S extends z.ZodObject>(schema: S, query: unknown): z.output<S> {
  const params = (query ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(params)) {
    if (!Object.hasOwn(schema.shape, name)) throw queryProblem('unknown_parameter', name);
    if (typeof value !== 'string') throw queryProblem('repeated_parameter', name);
  }
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  const { reason, field } = describeIssue(parsed.error.issues[0]!, params);
  throw queryProblem(reason, field);
}

export const queryProblem = (reason: string, parameter: string) =>
  new HttpProblem(400, 'invalid_query', { reason, parameter });

/** For endpoints that take no query parameters at all. */
export const noQuerySchema = z.strictObject({});
