import { readFileSync } from 'node:fs';
import { findCapability } from '../../domain/catalogue/index.js';
import type { ConnectivityEvent } from '../../domain/connectivity/events.js';
import { filedAt, type ReadingsRecordedData } from '../../domain/readings/index.js';
import type { RecordedEvent } from '../../eventstore/port.js';
import { jsonbArray, textArray, timestamptzArray } from '../../infra/postgres/binary-array.js';
import { bind } from '../../infra/postgres/prepared.js';
import { deviceKeyOf, type PartitionableProjector } from '../partitions.js';
import { ByDeviceCapability } from '../by-device-capability.js';
import { KEEPS_HISTORY_BEYOND_RETENTION, type Projector } from '../projector.js';
import { RepeatedTimes } from '../repeated-times.js';
import { RECORD_STATE } from './sql.js';

const schemaSql = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');

/**
 * The latest reading of a batch for one (device, capability). Candidates are ordered by server time, then
 * global order, then the device's time; a later one is written over the one it beats rather than made
 * anew, as in a replay nearly every reading beats the one before.
 */
interface Latest {
  readonly deviceId: string;
  readonly capability: string;
  value: unknown;
  readonly unit: string;
  deviceTime: string | null;
  serverTime: string;
  serverMs: number;
  eventIndex: number;
  filedMs: number;
}

interface Presence {
  connectivity: string | null;
  connectivityMs: number | undefined;
  lastSeenMs: number | undefined;
}

export const STATE_PROJECTOR_NAME = 'state';

/** Latest value per capability and the device's connectivity, from readings and connectivity changes. */
export function stateProjector(): Projector {
  return {
    name: STATE_PROJECTOR_NAME,
    version: 1,
    rebuildRefused: KEEPS_HISTORY_BEYOND_RETENTION,
    asynchronousCommit: true,
    eventTypes: ['DeviceConnectivityChanged', 'ReadingsRecorded'],
    tables: ['device_state', 'device_presence'],
    schemaSql,
    async apply(events, db) {
      const latest = new ByDeviceCapability<Latest>();
      const presence = new Map<string, Presence>();
      const deviceTimes = new RepeatedTimes();
      events.forEach((event, eventIndex) => {
        if (event.type === 'ReadingsRecorded')
          collectReadings(event, eventIndex, { latest, presence, deviceTimes });
        else if (event.type === 'DeviceConnectivityChanged') collectConnectivity(event, presence);
      });
      const rows = latest.values();
      if (rows.length === 0 && presence.size === 0) return;
      const entries = [...presence.entries()];
      await db.query(
        bind(RECORD_STATE, [
          textArray(rows.map((r) => r.deviceId)),
          textArray(rows.map((r) => r.capability)),
          jsonbArray(rows.map((r) => JSON.stringify(r.value))),
          textArray(rows.map((r) => r.unit)),
          timestamptzArray(rows.map((r) => r.deviceTime)),
          timestamptzArray(rows.map((r) => r.serverTime)),
          textArray(entries.map(([id]) => id)),
          textArray(entries.map(([, p]) => p.connectivity)),
          timestamptzArray(entries.map(([, p]) => p.connectivityMs)),
          timestamptzArray(entries.map(([, p]) => p.lastSeenMs)),
        ]),
      );
    },
  };
}

/** Partitioned by device: a device's readings and connectivity changes land in the same partition. */
export const stateFamily: PartitionableProjector = {
  family: STATE_PROJECTOR_NAME,
  create: (name) => ({ ...stateProjector(), name }),
  keyOf: deviceKeyOf,
};

function presenceOf(presence: Map<string, Presence>, deviceId: string): Presence {
  let p = presence.get(deviceId);
  if (!p) {
    p = { connectivity: null, connectivityMs: undefined, lastSeenMs: undefined };
    presence.set(deviceId, p);
  }
  return p;
}

function collectReadings(
  event: RecordedEvent,
  eventIndex: number,
  batch: { latest: ByDeviceCapability<Latest>; presence: Map<string, Presence>; deviceTimes: RepeatedTimes },
) {
  const { latest, presence, deviceTimes } = batch;
  const data = event.data as ReadingsRecordedData;
  const serverMs = Date.parse(data.receivedAt);
  const ofDevice = latest.of(data.deviceId);
  for (const reading of data.readings) {
    // A key retired from the catalogue has no unit to render; its old readings are left out of the state.
    const capability = findCapability(reading.capability);
    if (!capability) continue;
    const filedMs = filedAt(serverMs, deviceTimes.ms(reading.deviceTime));
    const current = ofDevice.get(capability.key);
    if (!current) {
      ofDevice.set(capability.key, {
        deviceId: data.deviceId,
        capability: capability.key,
        value: reading.value,
        unit: capability.unit,
        deviceTime: reading.deviceTime ?? null,
        serverTime: data.receivedAt,
        serverMs,
        eventIndex,
        filedMs,
      });
    } else if (isLater(serverMs, eventIndex, filedMs, current)) {
      current.value = reading.value;
      current.deviceTime = reading.deviceTime ?? null;
      current.serverTime = data.receivedAt;
      current.serverMs = serverMs;
      current.eventIndex = eventIndex;
      current.filedMs = filedMs;
    }
  }
  const p = presenceOf(presence, data.deviceId);
  p.lastSeenMs = Math.max(p.lastSeenMs ?? serverMs, serverMs);
}

// Readings come in global order, so on equal server times a later event wins; within one message the
// reading with the later device time wins, and on a tie the one later in the message.
function isLater(serverMs: number, eventIndex: number, filedMs: number, current: Latest): boolean {
  if (serverMs !== current.serverMs) return serverMs > current.serverMs;
  if (eventIndex !== current.eventIndex) return true;
  return filedMs >= current.filedMs;
}

function collectConnectivity(event: RecordedEvent, presence: Map<string, Presence>) {
  const data = event.data as ConnectivityEvent['data'];
  const observedMs = Date.parse(data.observedAt);
  const p = presenceOf(presence, data.deviceId);
  if (p.connectivityMs === undefined || observedMs >= p.connectivityMs) {
    p.connectivity = data.connectivity;
    p.connectivityMs = observedMs;
  }
  if (data.connectivity === 'online') p.lastSeenMs = Math.max(p.lastSeenMs ?? observedMs, observedMs);
}
