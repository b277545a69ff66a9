export {
  CANDIDATE_STATES,
  CLOSE_REASONS,
  CandidateAdopted,
  CandidateJoined,
  CandidateRejected,
  CandidateRejectionCleared,
  PAIRING_UPDATE_TYPES,
  PairingWindowClosed,
  PairingWindowOpened,
  WINDOW_STATES,
  pairingEvents,
  pairingUpdateOf,
  type CandidateState,
  type CloseReason,
  type PairingEvent,
  type PairingUpdate,
  type WindowState,
} from './events.js';
export {
  candidateState,
  joinOutcome,
  pairingDecider,
  pairingStreamName,
  type AdoptCandidate,
  type CandidateRecord,
  type ClearRejection,
  type CloseWindow,
  type JoinCandidate,
  type JoinOutcome,
  type OpenWindow,
  type PairingCommand,
  type PairingState,
  type RejectCandidate,
  type SessionRecord,
} from './decider.js';
export { decideAdoption, type AdoptionDecision, type AdoptionHub } from './adoption.js';
export { PAIRING_WINDOW_SECONDS, deadlineReached, windowDurationSeconds } from './window.js';
export { IEEE_ADDR_PATTERN, canonicalIeeeAddr } from './ieee.js';
