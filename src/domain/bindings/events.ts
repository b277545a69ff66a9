import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

const BindingCreated = defineEvent(
  'BindingCreated',
  z.object({
    bindingId: z.string(),
    projectId: z.string(),
    /** The device's public id. */
    deviceId: z.string(),
    resourceType: z.string(),
    resourceId: z.string(),
    /** Capability key -> the application's own label; empty when none was given. */
    channelMapping: z.record(z.string(), z.string()),
    /** Digest of the request that created it: a retry with the same idempotency key must match it. */
    requestFingerprint: z.string(),
    idempotencyKey: z.string().nullable(),
    createdAt: z.string(),
  }),
);

export const bindingEvents = [BindingCreated] as const;

export type BindingEvent = DomainEvent<typeof BindingCreated>;
export type Binding = BindingEvent['data'];
