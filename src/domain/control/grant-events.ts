import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';
import { actor } from '../events/actor.js';

/**
 * Write grants live on the device's stream (`device-<publicId>`), beside lifecycle, profile and command
 * acceptance, so a command is accepted only against the grant as it stands at the moment of the append: a
 * revoke recorded first makes the command's append fail its expected revision and be decided again.
 */

/**
 * An explicit "no" for writing one capability of one device. Adoption records one for every writable
 * capability (spec, Grants: "no grant -> explicit denial row"), so the grant decider starts from a recorded
 * denial rather than from silence.
 */
const CapabilityWriteDenied = defineEvent(
  'CapabilityWriteDenied',
  z.object({
    deviceId: z.string(),
    projectId: z.string(),
    capability: z.string(),
    /** adoption_default: recorded by adoption, before anyone asked for a grant. */
    reason: z.enum(['adoption_default']),
  }),
);

/** Who changed one (device, capability) pair's write grant, and when. */
const grantChange = z.object({
  deviceId: z.string(),
  projectId: z.string(),
  capability: z.string(),
  by: actor,
  at: z.string(),
});

/** Write enabled for exactly one (device, capability) pair. */
const CapabilityWriteGranted = defineEvent('CapabilityWriteGranted', grantChange);

/** Write taken back from one pair; commands for it are refused from this event on. */
const CapabilityWriteRevoked = defineEvent('CapabilityWriteRevoked', grantChange);

export const grantEvents = [CapabilityWriteDenied, CapabilityWriteGranted, CapabilityWriteRevoked] as const;

export type GrantEvent =
  | DomainEvent<typeof CapabilityWriteDenied>
  | DomainEvent<typeof CapabilityWriteGranted>
  | DomainEvent<typeof CapabilityWriteRevoked>;
