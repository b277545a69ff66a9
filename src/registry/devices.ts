import { fold } from '../domain/decider.js';
import {
  deviceDecider,
  deviceStreamName,
  type DeviceEvent,
  type DeviceState,
  type RegisterDevice,
} from '../domain/devices/index.js';
import { handleCommand } from '../eventstore/handle-command.js';
import type { EventStore } from '../eventstore/port.js';
import { newDevicePublicId } from './ids.js';

/**
 * Registers a device under a fresh public id. Adoption and hub registration (later issues) call this;
 * until then tests and fixtures do.
 */
export async function registerDevice(
  store: EventStore,
  input: Omit<RegisterDevice, 'type' | 'deviceId'>,
  metadata: Record<string, unknown> = {},
): Promise<{ deviceId: string; position: string | undefined }> {
  const deviceId = newDevicePublicId();
  const result = await handleCommand(
    store,
    deviceStreamName(deviceId),
    deviceDecider,
    { type: 'RegisterDevice', deviceId, ...input },
    { metadata },
  );
  return { deviceId, position: result.appended?.position };
}

/** The device as its own stream tells it: decisions never rest on a read model that may lag. */
export async function loadDevice(store: EventStore, deviceId: string): Promise<DeviceState> {
  const events = await store.readStream(deviceStreamName(deviceId));
  return fold(
    deviceDecider,
    events.map((e) => ({ type: e.type, data: e.data }) as DeviceEvent),
  );
}
