import { z } from 'zod';
import { InvalidInput } from '../domain/errors.js';

export const idempotencyKeySchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, { error: 'invalid_idempotency_key' })
  .meta({
    description: '1 to 255 printable ASCII characters, no spaces. Alternative to the Idempotency-Key header.',
  });

/** The Idempotency-Key header as OpenAPI describes it on the POSTs that take one. */
export const idempotencyKeyHeader = (what: string) => ({
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    `Same key and same ${what}: the same answer as the first time. Same key, other ${what}: 409. ` +
    'Alternative to the body field idempotencyKey (both given: they must be equal).',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
});

/** The header and the body field are two ways to send one key; sending two different keys is an error. */
export function idempotencyKey(header: string | undefined, body: string | undefined): string | undefined {
  if (header === undefined) return body;
  const parsed = idempotencyKeySchema.safeParse(header);
  if (!parsed.success) throw new InvalidInput('invalid_idempotency_key', 'Idempotency-Key');
  if (body !== undefined && body !== header)
    throw new InvalidInput('idempotency_key_mismatch', 'idempotencyKey');
  return header;
}
