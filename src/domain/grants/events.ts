import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

/**
 * An explicit "no" for writing one capability of one device, on the device's stream (`device-<publicId>`).
 * Adoption records one for every writable capability (spec, Grants: "no grant -> explicit denial row"), so
 * the grant decider of the control plane starts from a recorded denial rather than from silence.
 */
export const CapabilityWriteDenied = defineEvent(
  'CapabilityWriteDenied',
  z.object({
    deviceId: z.string(),
    projectId: z.string(),
    capability: z.string(),
    /** adoption_default: recorded by adoption, before anyone asked for a grant. */
    reason: z.enum(['adoption_default']),
  }),
);

export const grantEvents = [CapabilityWriteDenied] as const;

export type GrantEvent = DomainEvent<typeof CapabilityWriteDenied>;
