import { z } from 'zod';

/**
 * Who caused a control-plane fact, as auditors read it back: an OAuth client of the project (through the
 * API), an operator (through the devcloud CLI), or the service itself (a deadline, a TTL, a cascade).
 */
export const actor = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('client'), clientId: z.string() }),
  z.object({ kind: z.literal('operator'), reason: z.string().optional() }),
  z.object({ kind: z.literal('system') }),
]);

export type Actor = z.infer<typeof actor>;
