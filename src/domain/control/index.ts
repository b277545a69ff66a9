export {
  evolveControl,
  hasGrant,
  initialControlState,
  pendingCommands,
  type CommandRecord,
  type ControlEvent,
  type DeviceControlState,
  type GrantState,
} from './state.js';
export { controlFolding, loadControlState } from './folding.js';
export { REFUSAL_REASONS } from './safety-gate.js';
export {
  CHALLENGE_SECONDS,
  TTL_SECONDS_MAX,
  TTL_SECONDS_MIN,
  controlDecider,
  previousAcceptance,
  type ControlCommand,
  type RequestCommand,
  type SetGrant,
} from './decider.js';
export { type ControlKeyEvent } from './idempotency-key-events.js';
