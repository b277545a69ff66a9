import { fold } from '../domain/decider.js';
import {
  deviceDecider,
  deviceStreamName,
  type DeviceEvent,
  type DeviceState,
} from '../domain/devices/index.js';
import type { EventStore } from '../eventstore/port.js';

/** The device as its own stream tells it: decisions never rest on a read model that may lag. */
export async function loadDevice(store: EventStore, deviceId: string): Promise<DeviceState> {
  const events = await store.readStream(deviceStreamName(deviceId));
  return fold(
    deviceDecider,
    events.map((e) => ({ type: e.type, data: e.data }) as DeviceEvent),
  );
}
