import {
  controlDecider,
  controlFolding,
  type ControlCommand,
  type ControlEvent,
  type DeviceControlState,
} from '../domain/control/index.js';
import { deviceStreamName } from '../domain/devices/index.js';
import { foldStream } from '../eventstore/folded-streams.js';
import { decideOnStream, type Decision } from '../eventstore/handle-command.js';
import type { AppendResult, EventStore } from '../eventstore/port.js';

export type Metadata = Record<string, unknown>;

/** The device's control state as its own stream tells it now (never a read model). */
export async function readControlState(store: EventStore, deviceId: string): Promise<DeviceControlState> {
  return (await foldStream(store, deviceStreamName(deviceId), controlFolding)).state;
}

/**
 * One control decision on the device's stream through the optimistic loop: the decider's events, plus
 * whatever `alongside` adds for other streams in the same append.
 */
export async function decideOnDevice<Result = undefined>(
  store: EventStore,
  deviceId: string,
  command: ControlCommand,
  metadata: Metadata,
  extra: (events: readonly ControlEvent[]) => Omit<Decision<ControlEvent, Result>, 'events'> = () =>
    ({ result: undefined }) as Omit<Decision<ControlEvent, Result>, 'events'>,
): Promise<{
  events: readonly ControlEvent[];
  state: DeviceControlState;
  appended: AppendResult[];
  result: Result;
}> {
  let decided: readonly ControlEvent[] = [];
  const outcome = await decideOnStream(
    store,
    deviceStreamName(deviceId),
    controlFolding,
    (state) => {
      decided = controlDecider.decide(command, state);
      return { events: decided, ...extra(decided) };
    },
    { metadata },
  );
  return { events: decided, state: outcome.state, appended: outcome.appended, result: outcome.result };
}
