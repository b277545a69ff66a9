import type { DeviceProfile, DeviceStatus } from '../domain/devices/index.js';
import type { EventStore } from '../eventstore/port.js';
import { decideOnDevice, type Metadata } from './device-stream.js';

export interface AdminOutcome {
  /** False when the device already was as asked: nothing was recorded. */
  readonly changed: boolean;
  /** Commands cancelled by the move, in the same append. */
  readonly cancelled: readonly string[];
  /** S2/S3 grants revoked by a downgrade, in the same append. */
  readonly revoked: readonly string[];
}

/**
 * Operator moves (devcloud device profile|status): each an event naming the operator action and its reason.
 * Forbidden lifecycle moves throw Conflict lifecycle_move_not_allowed; an unknown device NotFound.
 */
export async function setDeviceProfile(
  store: EventStore,
  input: { deviceId: string; profile: DeviceProfile; reason?: string; now: Date },
  metadata: Metadata = {},
): Promise<AdminOutcome> {
  const { events } = await decideOnDevice(
    store,
    input.deviceId,
    { type: 'SetProfile', profile: input.profile, ...operator(input.reason), at: input.now.toISOString() },
    metadata,
  );
  return summary(events);
}

export async function setDeviceStatus(
  store: EventStore,
  input: { deviceId: string; status: DeviceStatus; reason?: string; now: Date },
  metadata: Metadata = {},
): Promise<AdminOutcome> {
  const { events } = await decideOnDevice(
    store,
    input.deviceId,
    { type: 'SetLifecycle', status: input.status, ...operator(input.reason), at: input.now.toISOString() },
    metadata,
  );
  return summary(events);
}

function operator(reason: string | undefined) {
  return reason === undefined
    ? { by: { kind: 'operator' as const } }
    : { by: { kind: 'operator' as const, reason }, reason };
}

function summary(events: readonly { type: string; data: unknown }[]): AdminOutcome {
  const of = (type: string, key: 'commandId' | 'capability') =>
    events.filter((e) => e.type === type).map((e) => (e.data as Record<string, string>)[key]!);
  return {
    changed: events.length > 0,
    cancelled: of('CommandCancelled', 'commandId'),
    revoked: of('CapabilityWriteRevoked', 'capability'),
  };
}
