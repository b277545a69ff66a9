import { randomUUID } from 'node:crypto';
import { NotFound } from '../domain/errors.js';
import {
  decideAdoption,
  joinOutcome,
  pairingDecider,
  pairingStreamName,
  type JoinCandidate,
  type JoinOutcome,
} from '../domain/pairing/index.js';
import { deviceStreamName, type DeviceEvent } from '../domain/devices/index.js';
import { decideOnStream, handleCommand } from '../eventstore/handle-command.js';
import type { EventStore, NewEvent } from '../eventstore/port.js';
import { newDevicePublicId } from '../registry/ids.js';
import { loadHub } from './hub.js';

type Metadata = Record<string, unknown>;
type RegisteredDevice = Extract<DeviceEvent, { type: 'DeviceRegistered' }>['data'];

/** Records a device that joined the hub's open window, unless the hub's pairing rules ignore the join. */
export async function joinCandidate(
  store: EventStore,
  input: Omit<JoinCandidate, 'type' | 'at'> & { hubId: string; now: Date },
  metadata: Metadata = {},
): Promise<JoinOutcome> {
  const { hubId, now, ...candidate } = input;
  const command: JoinCandidate = { type: 'JoinCandidate', ...candidate, at: now.toISOString() };
  const result = await handleCommand(store, pairingStreamName(hubId), pairingDecider, command, { metadata });
  const [joined] = result.events;
  if (joined?.type === 'CandidateJoined')
    return joined.data.state === 'pending' ? 'joined' : 'joined_rejected';
  return joinOutcome(result.state, command);
}

/**
 * Adopts a pending candidate: in one append (atomic on PostgreSQL), CandidateAdopted on the hub's pairing
 * stream at the revision read, and the new device's stream: its registration and one explicit write denial
 * per writable capability. A concurrent decision on the same hub forces a re-read and a fresh decision.
 */
export async function adoptCandidate(
  store: EventStore,
  input: { hubId: string; sessionId: string; ieeeAddr: string; now: Date },
  metadata: Metadata = {},
): Promise<{ device: RegisteredDevice; writeBlocked: readonly string[]; position: string }> {
  const hub = await loadHub(store, input.hubId);
  if (!hub) throw new NotFound('pairing session');
  const toNew = (e: { type: string; data: unknown }): NewEvent => ({ id: randomUUID(), ...e, metadata });
  const outcome = await decideOnStream(
    store,
    pairingStreamName(input.hubId),
    pairingDecider,
    (state) => {
      const deviceId = newDevicePublicId();
      const decision = decideAdoption(
        state,
        {
          type: 'AdoptCandidate',
          sessionId: input.sessionId,
          ieeeAddr: input.ieeeAddr,
          deviceId,
          at: input.now.toISOString(),
        },
        hub,
      );
      const registered = decision.device.find((e) => e.type === 'DeviceRegistered')!;
      return {
        events: decision.pairing,
        alongside: [
          {
            streamName: deviceStreamName(deviceId),
            events: decision.device.map(toNew),
            expectedRevision: 'no_stream',
          },
        ],
        result: { device: registered.data as RegisteredDevice, writeBlocked: decision.writeBlocked },
      };
    },
    { metadata },
  );
  return { ...outcome.result, position: outcome.appended[1]!.position };
}

/** Refuses a pending candidate; the record is kept and the hub remembers the address as rejected. */
export async function rejectCandidate(
  store: EventStore,
  input: { hubId: string; sessionId: string; ieeeAddr: string; now: Date },
  metadata: Metadata = {},
): Promise<{ position: string }> {
  const result = await handleCommand(
    store,
    pairingStreamName(input.hubId),
    pairingDecider,
    {
      type: 'RejectCandidate',
      sessionId: input.sessionId,
      ieeeAddr: input.ieeeAddr,
      at: input.now.toISOString(),
    },
    { metadata },
  );
  return { position: result.appended!.position };
}

/** Lifts the hub's memory of a rejected address (operator only, `devcloud pairing clear-rejection`). */
export async function clearRejection(
  store: EventStore,
  input: { hubId: string; ieeeAddr: string; now: Date },
  metadata: Metadata = {},
): Promise<void> {
  const hub = await loadHub(store, input.hubId);
  if (!hub) throw new NotFound('hub');
  await handleCommand(
    store,
    pairingStreamName(input.hubId),
    pairingDecider,
    {
      type: 'ClearRejection',
      hubId: input.hubId,
      projectId: hub.projectId,
      ieeeAddr: input.ieeeAddr,
      at: input.now.toISOString(),
    },
    { metadata },
  );
}
