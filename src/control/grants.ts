import type { GrantState } from '../domain/control/index.js';
import type { Actor } from '../domain/events/actor.js';
import type { EventStore } from '../eventstore/port.js';
import { decideOnDevice, type Metadata } from './device-stream.js';

export interface GrantOutcome {
  readonly capabilityKey: string;
  /** none: no record at all for the pair (refused like a denial). */
  readonly state: GrantState | 'none';
  readonly changedBy: Actor | undefined;
  readonly changedAt: string | undefined;
  /** Position of the last event recorded; undefined when the grant already was as asked. */
  readonly position: string | undefined;
}

/**
 * PUT capability-grants: enables (write true) or revokes (write false) one (device, capability) pair of the
 * caller's project. A revoke cancels the pair's pending commands in the same append.
 */
export async function setCapabilityGrant(
  store: EventStore,
  input: {
    projectId: string;
    clientId: string;
    deviceId: string;
    capabilityKey: string;
    write: boolean;
    now: Date;
  },
  metadata: Metadata = {},
): Promise<GrantOutcome> {
  const { events, state, appended } = await decideOnDevice(
    store,
    input.deviceId,
    {
      type: 'SetGrant',
      projectId: input.projectId,
      by: { kind: 'client', clientId: input.clientId },
      at: input.now.toISOString(),
      capability: input.capabilityKey,
      write: input.write,
    },
    metadata,
  );
  const grant = state.grants.get(input.capabilityKey);
  return {
    capabilityKey: input.capabilityKey,
    state: grant?.state ?? 'none',
    changedBy: grant?.by,
    changedAt: grant?.at,
    position: events.length > 0 ? appended[0]?.position : undefined,
  };
}
