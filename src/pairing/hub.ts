import { fold } from '../domain/decider.js';
import {
  deviceDecider,
  deviceStreamName,
  type DeviceEvent,
  type DeviceStatus,
} from '../domain/devices/index.js';
import type { EventStore } from '../eventstore/port.js';

export interface Hub {
  readonly hubId: string;
  readonly projectId: string;
  readonly siteId: string;
  readonly status: DeviceStatus;
}

/** The hub as its own stream tells it; undefined when the id is not a registered hub. */
export async function loadHub(store: EventStore, hubId: string): Promise<Hub | undefined> {
  const events = (await store.readStream(deviceStreamName(hubId))).map(
    (e) => ({ type: e.type, data: e.data }) as DeviceEvent,
  );
  const registered = events.find((e) => e.type === 'DeviceRegistered');
  const state = fold(deviceDecider, events);
  if (!registered || !state.registered || state.kind !== 'hub') return undefined;
  return { hubId, projectId: state.projectId, siteId: registered.data.siteId, status: state.status };
}
