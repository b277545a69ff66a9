import { findCapability } from '../../domain/catalogue/index.js';
import type { CommandEvent } from '../../domain/control/command-events.js';
import type { ConnectivityEvent } from '../../domain/connectivity/events.js';
import type { DeviceEvent } from '../../domain/devices/events.js';
import { PAIRING_UPDATE_TYPES, pairingUpdateOf, type PairingEvent } from '../../domain/pairing/events.js';
import type { ReadingsRecordedData } from '../../domain/readings/events.js';
import { qualityOf } from '../../domain/readings/quality.js';
import type { RecordedEvent } from '../../eventstore/port.js';
import { frameKey, type FrameIds } from './frame-id.js';

/** The frame types of the live stream (spec, Events). */
export const LIVE_TYPES = ['telemetry', 'device_status', 'command_update', 'pairing_update'] as const;
export type LiveType = (typeof LIVE_TYPES)[number];

/** Which stored events each frame type comes from; a catch-up read asks the store for these only. */
export const SOURCE_EVENT_TYPES: Readonly<Record<LiveType, readonly string[]>> = {
  telemetry: ['ReadingsRecorded'],
  device_status: [
    'DeviceRegistered',
    'DeviceLifecycleChanged',
    'DeviceProfileVerified',
    'DeviceProfileDowngraded',
    'DeviceConnectivityChanged',
  ],
  // CommandChallengeIssued (no command exists yet) and CommandAckIgnored (nothing changed) are not updates.
  command_update: [
    'CommandAccepted',
    'CommandSent',
    'CommandSucceeded',
    'CommandFailed',
    'CommandExpired',
    'CommandSuperseded',
    'CommandCancelled',
  ],
  pairing_update: PAIRING_UPDATE_TYPES,
};

export const sourceEventTypes = (types: Iterable<LiveType>): string[] =>
  [...new Set([...types].flatMap((t) => SOURCE_EVENT_TYPES[t]))].sort();

/** One frame as the hub keeps it: what it is about (for tenancy and filters) and its SSE text, built once. */
export interface LiveFrame {
  /** Position and index: frames sort by it (see frame-id.ts). Never sent: the id is sealed. */
  readonly key: string;
  readonly type: LiveType;
  readonly projectId: string;
  readonly deviceId: string | null;
  /** The hub of a pairing_update, so a deviceIds filter naming the hub sees its window. */
  readonly hubId: string | null;
  readonly capability: string | null;
  readonly text: string;
}

/** Facts frames need that some events do not carry; see LiveDirectory. */
export interface FrameLookups {
  projectOfDevice(deviceId: string): string | undefined;
  capabilityOfCommand(commandId: string): string | undefined;
}

/**
 * The frames of one stored event, in index order; none for an event that is not a live update. Each frame
 * is of one project, so its id is sealed for that project once, here.
 */
export function framesOf(event: RecordedEvent, lookups: FrameLookups, ids: FrameIds): LiveFrame[] {
  const at = event.recordedAt.getTime();
  let index = 0;
  const frame = (
    type: LiveType,
    about: { projectId: string; deviceId: string | null; hubId?: string | null; capability?: string | null },
    data: Record<string, unknown>,
  ): LiveFrame => {
    const id = ids.encode(about.projectId, event.position, index, at);
    return {
      key: frameKey(event.position, index++),
      type,
      projectId: about.projectId,
      deviceId: about.deviceId,
      hubId: about.hubId ?? null,
      capability: about.capability ?? null,
      text: `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`,
    };
  };

  if (event.type === 'ReadingsRecorded') {
    const data = event.data as ReadingsRecordedData;
    const serverTimeMs = Date.parse(data.receivedAt);
    return data.readings.map((reading) => {
      const deviceTimeMs = reading.deviceTime === undefined ? undefined : Date.parse(reading.deviceTime);
      const capability = findCapability(reading.capability);
      return frame(
        'telemetry',
        { projectId: data.projectId, deviceId: data.deviceId, capability: reading.capability },
        {
          deviceId: data.deviceId,
          capability: reading.capability,
          value: reading.value,
          unit: capability?.unit ?? null,
          // As the state endpoint would have marked it when it arrived: fresh, perhaps from a skewed clock.
          quality: capability
            ? qualityOf({
                capability,
                serverTimeMs,
                deviceTimeMs,
                nowMs: serverTimeMs,
                siteDayStartMs: undefined,
              })
            : ['valid'],
          deviceTime: reading.deviceTime ?? null,
          serverTime: data.receivedAt,
        },
      );
    });
  }

  const status = deviceStatusOf(event);
  if (status) {
    const projectId = status.projectId ?? lookups.projectOfDevice(status.deviceId);
    if (!projectId) return [];
    const { projectId: _p, ...data } = status;
    return [frame('device_status', { projectId, deviceId: status.deviceId }, data)];
  }

  if ((SOURCE_EVENT_TYPES.command_update as readonly string[]).includes(event.type)) {
    const update = commandUpdateOf(event, lookups);
    if (!update) return [];
    const { projectId, ...data } = update;
    return [
      frame('command_update', { projectId, deviceId: data.deviceId, capability: data.capability }, data),
    ];
  }

  if ((PAIRING_UPDATE_TYPES as readonly string[]).includes(event.type)) {
    const pairing = event as unknown as PairingEvent;
    const data = pairingUpdateOf(pairing);
    if (!data) return [];
    return [
      frame(
        'pairing_update',
        { projectId: pairing.data.projectId, deviceId: data.deviceId, hubId: data.hubId },
        { ...data },
      ),
    ];
  }
  return [];
}

interface DeviceStatusData {
  readonly deviceId: string;
  /** Carried by the event, or undefined when it must be looked up. */
  readonly projectId: string | undefined;
  readonly change: 'lifecycle' | 'connectivity' | 'profile';
  readonly status: string;
  readonly reason: string | null;
  readonly at: string;
}

function deviceStatusOf(event: RecordedEvent): DeviceStatusData | undefined {
  const recordedAt = event.recordedAt.toISOString();
  const e = event as unknown as DeviceEvent | ConnectivityEvent;
  switch (e.type) {
    case 'DeviceRegistered':
      // A device appears in the registry active (src/domain/devices/decider.ts).
      return {
        deviceId: e.data.deviceId,
        projectId: e.data.projectId,
        change: 'lifecycle',
        status: 'active',
        reason: 'registered',
        at: recordedAt,
      };
    case 'DeviceLifecycleChanged':
      return {
        deviceId: e.data.deviceId,
        projectId: undefined,
        change: 'lifecycle',
        status: e.data.status,
        reason: e.data.reason ?? null,
        at: e.data.at ?? recordedAt,
      };
    case 'DeviceProfileVerified':
    case 'DeviceProfileDowngraded':
      return {
        deviceId: e.data.deviceId,
        projectId: undefined,
        change: 'profile',
        status: e.type === 'DeviceProfileVerified' ? 'verified' : 'draft',
        reason: e.data.reason ?? null,
        at: e.data.at ?? recordedAt,
      };
    case 'DeviceConnectivityChanged':
      return {
        deviceId: e.data.deviceId,
        projectId: e.data.projectId,
        change: 'connectivity',
        status: e.data.connectivity,
        reason: e.data.cause,
        at: e.data.observedAt,
      };
    default:
      return undefined;
  }
}

interface CommandUpdateData {
  readonly projectId: string;
  readonly commandId: string;
  readonly deviceId: string;
  readonly capability: string;
  readonly status: string;
  readonly time: string;
  readonly reason?: string;
  readonly attempt?: number;
  readonly supersededBy?: string;
}

function commandUpdateOf(event: RecordedEvent, lookups: FrameLookups): CommandUpdateData | undefined {
  const e = event as unknown as CommandEvent;
  if (e.type === 'CommandChallengeIssued' || e.type === 'CommandAckIgnored') return undefined;
  const { commandId, deviceId, projectId } = e.data;
  const capability =
    e.type === 'CommandAccepted' ? e.data.capability : lookups.capabilityOfCommand(commandId);
  if (capability === undefined) return undefined;
  const base = { projectId, commandId, deviceId, capability };
  switch (e.type) {
    case 'CommandAccepted':
      return { ...base, status: 'queued', time: e.data.acceptedAt };
    case 'CommandSent':
      return { ...base, status: 'sent', time: e.data.sentAt, attempt: e.data.attempt };
    case 'CommandSucceeded':
      return { ...base, status: 'succeeded', time: e.data.at };
    case 'CommandFailed':
      return { ...base, status: 'failed', time: e.data.at, reason: e.data.reason };
    case 'CommandExpired':
      return { ...base, status: 'expired', time: e.data.at };
    case 'CommandSuperseded':
      return { ...base, status: 'superseded', time: e.data.at, supersededBy: e.data.supersededBy };
    case 'CommandCancelled':
      return { ...base, status: 'cancelled', time: e.data.at, reason: e.data.reason };
  }
}
