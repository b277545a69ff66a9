export {
  PENDING_COMMAND_STATUSES,
  evolveControl,
  hasGrant,
  initialControlState,
  isFinal,
  isPending,
  pendingCommands,
  type Change,
  type ChallengeRecord,
  type CommandAttempt,
  type CommandOutcome,
  type CommandRecord,
  type ControlEvent,
  type DeviceControlState,
  type GrantRecord,
  type GrantState,
  type Registration,
} from './state.js';
export { controlFolding, loadControlState } from './folding.js';
export {
  REFUSAL_REASONS,
  checkSafetyGate,
  type GateCaller,
  type GateRequest,
  type GateVerdict,
  type RefusalReason,
} from './safety-gate.js';
export {
  CHALLENGE_SECONDS,
  TTL_SECONDS_MAX,
  TTL_SECONDS_MIN,
  checkTtl,
  controlDecider,
  previousAcceptance,
  type ControlCommand,
  type RequestCommand,
  type SetGrant,
  type SetLifecycle,
  type SetProfile,
} from './decider.js';
export { isBefore } from './instants.js';
export {
  CommandIdempotencyKeyClaimed,
  controlEvents,
  type ControlKeyEvent,
} from './idempotency-key-events.js';
