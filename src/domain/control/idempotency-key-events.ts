import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

/**
 * The first command accepted with an idempotency key in a project claims the key, on a stream named after
 * (project, key), in the same append as its CommandAccepted: a second acceptance with the key, on any
 * device, fails that stream's no-stream expectation and is answered from the claim instead.
 */
const CommandIdempotencyKeyClaimed = defineEvent(
  'CommandIdempotencyKeyClaimed',
  z.object({
    projectId: z.string(),
    idempotencyKey: z.string(),
    requestHash: z.string(),
    deviceId: z.string(),
    commandId: z.string(),
    at: z.string(),
  }),
);

export const controlEvents = [CommandIdempotencyKeyClaimed] as const;

export type ControlKeyEvent = DomainEvent<typeof CommandIdempotencyKeyClaimed>;
