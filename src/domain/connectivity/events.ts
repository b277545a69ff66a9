import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

/**
 * What the edge last told us about reachability. The ingress records a change when an agent connects or
 * goes away (its last will, or the broker seeing the connection close) and when an agent reports one of its
 * devices; the state endpoint's `connectivity` and `lastSeenAt` come from these and from readings.
 */
export const CONNECTIVITY_STATES = ['online', 'offline', 'unreachable'] as const;
export type Connectivity = (typeof CONNECTIVITY_STATES)[number];

const DeviceConnectivityChanged = defineEvent(
  'DeviceConnectivityChanged',
  z.object({
    deviceId: z.string(),
    projectId: z.string(),
    connectivity: z.enum(CONNECTIVITY_STATES),
    /** Server time of the observation, ISO 8601 UTC. */
    observedAt: z.iso.datetime(),
    /** Why, in a word: agent_connected, agent_offline, last_will, device_reported. */
    cause: z.string().max(64),
    /**
     * On a hub's change from its agent connecting or going away: the broker connection it came from. An
     * "offline" from an older connection (a late will from a dead broker node) is fenced off by it.
     */
    connectionId: z.string().max(64).optional(),
  }),
  'forever',
);

/**
 * A hub's agent connected again, through a new broker connection, while its hub was online on record: not a
 * change of connectivity (no `device_status` frame), but the connection the hub is now reached through. The
 * end of an older connection is fenced off by it. Kept in the hub's connectivity stream.
 */
const HubConnectionReplaced = defineEvent(
  'HubConnectionReplaced',
  z.object({
    deviceId: z.string(),
    projectId: z.string(),
    connectionId: z.string().max(64),
    /** Server time of the observation, ISO 8601 UTC. */
    observedAt: z.iso.datetime(),
  }),
  'forever',
);

export const connectivityEvents = [DeviceConnectivityChanged, HubConnectionReplaced] as const;
export type ConnectivityEvent = DomainEvent<typeof DeviceConnectivityChanged>;
export type HubConnectionEvent = DomainEvent<typeof HubConnectionReplaced>;
