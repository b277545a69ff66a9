import type { z } from 'zod';

/**
 * Every fact the system records is declared once: its type name, the zod schema of its data, and how long
 * it is kept. Control-plane facts are kept for ever (auditors replay them); readings have a retention.
 */
export type Retention = 'forever' | 'readings';

export interface EventDefinition<T extends string = string, S extends z.ZodType = z.ZodType> {
  readonly type: T;
  readonly schema: S;
  readonly retention: Retention;
}

export function defineEvent<T extends string, S extends z.ZodType>(
  type: T,
  schema: S,
  retention: Retention = 'forever',
): EventDefinition<T, S> {
  return { type, schema, retention };
}

/** A domain event as deciders produce and consume it: the type and its validated data. */
export type DomainEvent<D extends EventDefinition> =
  D extends EventDefinition<infer T, infer S> ? { readonly type: T; readonly data: z.infer<S> } : never;
