import {
  evolveControl,
  hasGrant,
  initialControlState,
  type ControlEvent,
  type DeviceControlState,
} from '../domain/control/index.js';
import { deviceEvents } from '../domain/devices/events.js';
import type { Actor } from '../domain/events/actor.js';
import { grantEvents } from '../domain/control/grant-events.js';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';
import { describeActor, occurredAt, readHistory, withinFilter, type AuditFilter } from './history.js';

/** One change of a (device, capability) write grant. */
export interface GrantChangeRow {
  readonly position: string;
  readonly at: string;
  readonly projectId: string;
  readonly deviceId: string;
  readonly capability: string;
  readonly change: 'denied' | 'granted' | 'revoked';
  readonly by: string;
}

/** A grant in force at `asOf`, with the device's lifecycle and profile at that instant (the gate needs all three). */
export interface GrantInForceRow {
  readonly asOf: string;
  readonly projectId: string;
  readonly deviceId: string;
  readonly capability: string;
  readonly grantedAt: string;
  readonly by: string;
  /** Position of the event that granted it. */
  readonly position: string;
  readonly deviceStatus: string;
  readonly profile: string;
}

const GRANT_TYPES = grantEvents.map((d) => d.type);
const CHANGES = {
  CapabilityWriteDenied: 'denied',
  CapabilityWriteGranted: 'granted',
  CapabilityWriteRevoked: 'revoked',
} as const;

type GrantData = { deviceId: string; projectId: string; capability: string; by?: Actor };

/** Every grant change, oldest first, replayed from the event store. */
export async function grantHistory(store: EventStore, filter: AuditFilter): Promise<GrantChangeRow[]> {
  const rows: GrantChangeRow[] = [];
  for await (const event of readHistory(store, GRANT_TYPES)) {
    const data = event.data as GrantData;
    const at = occurredAt(event);
    if (!withinFilter(data, at, filter)) continue;
    rows.push({
      position: event.position,
      at,
      projectId: data.projectId,
      deviceId: data.deviceId,
      capability: data.capability,
      change: CHANGES[event.type as keyof typeof CHANGES],
      by: describeActor(data.by, event.type === 'CapabilityWriteDenied' ? 'adoption' : 'system'),
    });
  }
  return rows;
}

/**
 * The grants in force at `asOf` (inclusive): each device's stream folded, with the same fold the safety gate
 * decides over, up to that instant. Only pairs with write enabled are listed.
 */
export async function grantsInForce(
  store: EventStore,
  asOf: string,
  filter: Omit<AuditFilter, 'from' | 'to'>,
): Promise<GrantInForceRow[]> {
  const devices = new Map<string, { state: DeviceControlState; granted: Map<string, RecordedEvent> }>();
  for await (const event of readHistory(store, [...deviceEvents.map((d) => d.type), ...GRANT_TYPES])) {
    // A registration carries no decision time; nothing of its device comes before it in the stream.
    if (event.type !== 'DeviceRegistered' && occurredAt(event) > asOf) continue;
    const deviceId = (event.data as { deviceId: string }).deviceId;
    if (filter.deviceId !== undefined && deviceId !== filter.deviceId) continue;
    const device = devices.get(deviceId) ?? { state: initialControlState(), granted: new Map() };
    device.state = evolveControl(device.state, { type: event.type, data: event.data } as ControlEvent);
    if (event.type === 'CapabilityWriteGranted')
      device.granted.set((event.data as GrantData).capability, event);
    devices.set(deviceId, device);
  }
  const rows: GrantInForceRow[] = [];
  for (const [deviceId, { state, granted }] of devices) {
    const projectId = state.registration?.projectId;
    if (projectId === undefined || (filter.projectId !== undefined && projectId !== filter.projectId))
      continue;
    for (const [capability, event] of granted) {
      if (!hasGrant(state, capability)) continue;
      rows.push({
        asOf,
        projectId,
        deviceId,
        capability,
        grantedAt: occurredAt(event),
        by: describeActor((event.data as GrantData).by),
        position: event.position,
        deviceStatus: state.status,
        profile: state.profile,
      });
    }
  }
  return rows.sort((a, b) => store.comparePositions(a.position, b.position));
}
