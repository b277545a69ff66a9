import { z } from 'zod';
import { actor } from '../events/actor.js';
import { defineEvent, type DomainEvent } from '../events/definition.js';
import { DEVICE_KINDS, DEVICE_PROFILES, DEVICE_STATUSES } from './lifecycle.js';

/**
 * Facts of a device's stream (`device-<publicId>`). Adoption, agent registration, grants and commands
 * append to the same stream later, so readers of it must skip event types they do not know.
 */
export const DeviceRegistered = defineEvent(
  'DeviceRegistered',
  z.object({
    /** The public id. */
    deviceId: z.string(),
    projectId: z.string(),
    siteId: z.string(),
    /** Null for a hub, or for a device that has no parent. */
    parentHubId: z.string().nullable(),
    kind: z.enum(DEVICE_KINDS),
    /** As reported by the device; case preserved exactly. */
    manufacturer: z.string(),
    productModel: z.string(),
    /** Catalogue keys. Kept as plain strings so a key retired from the catalogue never breaks a replay. */
    capabilities: z.array(z.string()),
    profile: z.enum(DEVICE_PROFILES),
    /** The radio address: internal, for the edge side only. Never served by the API. */
    ieeeAddr: z.string().optional(),
  }),
);

/** `by` and `at` are absent on events recorded before the control plane existed. */
const DeviceLifecycleChanged = defineEvent(
  'DeviceLifecycleChanged',
  z.object({
    deviceId: z.string(),
    status: z.enum(DEVICE_STATUSES),
    reason: z.string().optional(),
    by: actor.optional(),
    at: z.string().optional(),
  }),
);

const DeviceProfileVerified = defineEvent(
  'DeviceProfileVerified',
  z.object({
    deviceId: z.string(),
    reason: z.string().optional(),
    by: actor.optional(),
    at: z.string().optional(),
  }),
);

/** Back to draft: S2 and S3 capabilities of the device can no longer be armed (spec, Catalogue profile). */
const DeviceProfileDowngraded = defineEvent(
  'DeviceProfileDowngraded',
  z.object({ deviceId: z.string(), reason: z.string().optional(), by: actor, at: z.string() }),
);

export const deviceEvents = [
  DeviceRegistered,
  DeviceLifecycleChanged,
  DeviceProfileVerified,
  DeviceProfileDowngraded,
] as const;

export type DeviceEvent =
  | DomainEvent<typeof DeviceRegistered>
  | DomainEvent<typeof DeviceLifecycleChanged>
  | DomainEvent<typeof DeviceProfileVerified>
  | DomainEvent<typeof DeviceProfileDowngraded>;
