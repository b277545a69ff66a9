export {
  CANDIDATE_STATES,
  CLOSE_REASONS,
  WINDOW_STATES,
  pairingUpdateOf,
  type CandidateState,
  type CloseReason,
  type PairingEvent,
  type WindowState,
} from './events.js';
export {
  joinOutcome,
  pairingDecider,
  pairingStreamName,
  type JoinCandidate,
  type JoinOutcome,
} from './decider.js';
export { decideAdoption } from './adoption.js';
export { PAIRING_WINDOW_SECONDS, windowDurationSeconds } from './window.js';
export { IEEE_ADDR_PATTERN, canonicalIeeeAddr } from './ieee.js';
