import { fold } from '../decider.js';
import { evolveControl, initialControlState, type ControlEvent, type DeviceControlState } from './state.js';

/** The fold as the optimistic loop (decideOnStream) takes it. */
export const controlFolding = { initialState: initialControlState, evolve: evolveControl };

/** The control state after these events of one device stream, in stream order. */
export function loadControlState(events: readonly ControlEvent[]): DeviceControlState {
  return fold(controlFolding, events);
}
