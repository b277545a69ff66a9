import type { Decider } from '../decider.js';
import { checkReportedProfile } from '../devices/index.js';
import { Conflict, InvalidInput, NotFound } from '../errors.js';
import type { CandidateState, CloseReason, PairingEvent, WindowState } from './events.js';
import { deadlineReached } from './window.js';

interface OpenWindow {
  readonly type: 'OpenWindow';
  readonly sessionId: string;
  readonly hubId: string;
  readonly projectId: string;
  readonly at: string;
  readonly closesAt: string;
}

/** `deadline` closes only a window whose deadline has passed; `closed_by_client` closes it now. */
interface CloseWindow {
  readonly type: 'CloseWindow';
  readonly sessionId: string;
  readonly reason: CloseReason;
  readonly at: string;
}

export interface JoinCandidate {
  readonly type: 'JoinCandidate';
  readonly sessionId: string;
  readonly ieeeAddr: string;
  readonly manufacturer: string;
  readonly productModel: string;
  readonly capabilities: readonly string[];
  readonly at: string;
}

export interface AdoptCandidate {
  readonly type: 'AdoptCandidate';
  readonly sessionId: string;
  readonly ieeeAddr: string;
  /** The public id the new device gets; chosen by the caller. */
  readonly deviceId: string;
  readonly at: string;
}

interface RejectCandidate {
  readonly type: 'RejectCandidate';
  readonly sessionId: string;
  readonly ieeeAddr: string;
  readonly at: string;
}

interface ClearRejection {
  readonly type: 'ClearRejection';
  readonly hubId: string;
  readonly projectId: string;
  readonly ieeeAddr: string;
  readonly at: string;
}

export type PairingCommand =
  OpenWindow | CloseWindow | JoinCandidate | AdoptCandidate | RejectCandidate | ClearRejection;

interface CandidateRecord {
  readonly ieeeAddr: string;
  readonly state: CandidateState;
  readonly deviceId: string | null;
  readonly manufacturer: string;
  readonly productModel: string;
  readonly capabilities: readonly string[];
}

interface SessionRecord {
  readonly sessionId: string;
  readonly state: WindowState;
  readonly closesAt: string;
  readonly candidates: ReadonlyMap<string, CandidateRecord>;
}

/** One hub's pairing history: its windows, and what it remembers about addresses across windows. */
export interface PairingState {
  readonly hubId: string | undefined;
  readonly projectId: string | undefined;
  readonly sessions: ReadonlyMap<string, SessionRecord>;
  readonly openSessionId: string | undefined;
  /** ieee address -> public id, for every device adopted through this hub. */
  readonly adopted: ReadonlyMap<string, string>;
  /** Addresses rejected on this hub and not cleared since: they stay rejected when they join again. */
  readonly rejected: ReadonlySet<string>;
}

/** What became of a join; everything but `joined` and `joined_rejected` records nothing. */
export type JoinOutcome =
  | 'joined'
  | 'joined_rejected'
  | 'unknown_session'
  | 'window_closed'
  | 'already_candidate'
  | 'already_adopted';

export const pairingStreamName = (hubId: string) => `pairing-${hubId}`;

export function joinOutcome(state: PairingState, command: JoinCandidate): JoinOutcome {
  const session = state.sessions.get(command.sessionId);
  if (!session) return 'unknown_session';
  if (session.state !== 'open' || deadlineReached(session.closesAt, command.at)) return 'window_closed';
  if (state.adopted.has(command.ieeeAddr)) return 'already_adopted';
  const remembered = state.rejected.has(command.ieeeAddr);
  const existing = session.candidates.get(command.ieeeAddr);
  // A candidate whose rejection was cleared during this window may join it again, as pending.
  if (existing && (existing.state !== 'rejected' || remembered)) return 'already_candidate';
  return remembered ? 'joined_rejected' : 'joined';
}

/**
 * The state a decision about a candidate must start from: pending in its session, and not adopted or
 * rejected on the hub since (through a later window).
 */
function candidateState(state: PairingState, candidate: CandidateRecord): CandidateState {
  if (state.adopted.has(candidate.ieeeAddr)) return 'adopted';
  if (candidate.state === 'pending' && state.rejected.has(candidate.ieeeAddr)) return 'rejected';
  return candidate.state;
}

export const pairingDecider: Decider<PairingCommand, PairingEvent, PairingState> = {
  initialState: () => ({
    hubId: undefined,
    projectId: undefined,
    sessions: new Map(),
    openSessionId: undefined,
    adopted: new Map(),
    rejected: new Set(),
  }),

  decide(command, state) {
    switch (command.type) {
      case 'OpenWindow':
        return open(command, state);
      case 'CloseWindow':
        return close(command, state);
      case 'JoinCandidate':
        return join(command, state);
      case 'AdoptCandidate':
      case 'RejectCandidate':
        return decideCandidate(command, state);
      case 'ClearRejection':
        if (!state.rejected.has(command.ieeeAddr)) throw new NotFound('rejection');
        return [
          {
            type: 'CandidateRejectionCleared',
            data: {
              hubId: command.hubId,
              projectId: command.projectId,
              ieeeAddr: command.ieeeAddr,
              clearedAt: command.at,
            },
          },
        ];
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'PairingWindowOpened': {
        const { sessionId, hubId, projectId, closesAt } = event.data;
        const sessions = new Map(state.sessions);
        sessions.set(sessionId, { sessionId, state: 'open', closesAt, candidates: new Map() });
        return { ...state, hubId, projectId, sessions, openSessionId: sessionId };
      }
      case 'PairingWindowClosed': {
        const session = state.sessions.get(event.data.sessionId);
        if (!session) return state;
        const sessions = new Map(state.sessions);
        sessions.set(session.sessionId, { ...session, state: 'closed' });
        const openSessionId = state.openSessionId === session.sessionId ? undefined : state.openSessionId;
        return { ...state, sessions, openSessionId };
      }
      case 'CandidateJoined': {
        const { sessionId, ieeeAddr, state: joined, manufacturer, productModel, capabilities } = event.data;
        return withCandidate(state, sessionId, ieeeAddr, () => ({
          ieeeAddr,
          state: joined,
          deviceId: null,
          manufacturer,
          productModel,
          capabilities,
        }));
      }
      case 'CandidateAdopted': {
        const { sessionId, ieeeAddr, deviceId } = event.data;
        const next = withCandidate(
          state,
          sessionId,
          ieeeAddr,
          (c) => c && { ...c, state: 'adopted', deviceId },
        );
        const adopted = new Map(state.adopted);
        adopted.set(ieeeAddr, deviceId);
        return { ...next, adopted };
      }
      case 'CandidateRejected': {
        const { sessionId, ieeeAddr } = event.data;
        const next = withCandidate(state, sessionId, ieeeAddr, (c) => c && { ...c, state: 'rejected' });
        return { ...next, rejected: new Set([...state.rejected, ieeeAddr]) };
      }
      case 'CandidateRejectionCleared': {
        const rejected = new Set(state.rejected);
        rejected.delete(event.data.ieeeAddr);
        return { ...state, rejected };
      }
      default:
        return state;
    }
  },
};

function open(command: OpenWindow, state: PairingState): PairingEvent[] {
  if (deadlineReached(command.closesAt, command.at))
    throw new InvalidInput('deadline_not_after_open', 'closesAt');
  if (state.sessions.has(command.sessionId))
    throw new Conflict('session_exists', { sessionId: command.sessionId });
  const events: PairingEvent[] = [];
  const current = state.openSessionId === undefined ? undefined : state.sessions.get(state.openSessionId);
  if (current) {
    if (!deadlineReached(current.closesAt, command.at)) {
      throw new Conflict('pairing_window_open', { sessionId: current.sessionId });
    }
    // Its deadline passed but nobody has recorded the close yet: record it first, as of that deadline.
    events.push(closed(state, current, 'deadline', current.closesAt));
  }
  events.push({
    type: 'PairingWindowOpened',
    data: {
      sessionId: command.sessionId,
      hubId: command.hubId,
      projectId: command.projectId,
      ieeeAddr: null,
      state: 'open',
      deviceId: null,
      openedAt: command.at,
      closesAt: command.closesAt,
    },
  });
  return events;
}

function close(command: CloseWindow, state: PairingState): PairingEvent[] {
  const session = state.sessions.get(command.sessionId);
  if (!session) throw new NotFound('pairing session');
  if (session.state === 'closed') return [];
  if (command.reason === 'deadline') {
    if (!deadlineReached(session.closesAt, command.at)) return [];
    return [closed(state, session, 'deadline', session.closesAt)];
  }
  return [closed(state, session, command.reason, command.at)];
}

function closed(state: PairingState, session: SessionRecord, reason: CloseReason, at: string): PairingEvent {
  return {
    type: 'PairingWindowClosed',
    data: {
      sessionId: session.sessionId,
      hubId: state.hubId!,
      projectId: state.projectId!,
      ieeeAddr: null,
      state: 'closed',
      deviceId: null,
      reason,
      closedAt: at,
    },
  };
}

function join(command: JoinCandidate, state: PairingState): PairingEvent[] {
  checkReportedProfile(command);
  const outcome = joinOutcome(state, command);
  if (outcome !== 'joined' && outcome !== 'joined_rejected') return [];
  return [
    {
      type: 'CandidateJoined',
      data: {
        sessionId: command.sessionId,
        hubId: state.hubId!,
        projectId: state.projectId!,
        ieeeAddr: command.ieeeAddr,
        state: outcome === 'joined' ? 'pending' : 'rejected',
        deviceId: null,
        manufacturer: command.manufacturer,
        productModel: command.productModel,
        capabilities: [...command.capabilities],
        joinedAt: command.at,
      },
    },
  ];
}

function decideCandidate(command: AdoptCandidate | RejectCandidate, state: PairingState): PairingEvent[] {
  const session = state.sessions.get(command.sessionId);
  if (!session) throw new NotFound('pairing session');
  const candidate = session.candidates.get(command.ieeeAddr);
  if (!candidate) throw new NotFound('candidate');
  const current = candidateState(state, candidate);
  if (current !== 'pending') {
    const deviceId = state.adopted.get(candidate.ieeeAddr);
    throw new Conflict('candidate_not_pending', { state: current, ...(deviceId ? { deviceId } : {}) });
  }
  const common = {
    sessionId: command.sessionId,
    hubId: state.hubId!,
    projectId: state.projectId!,
    ieeeAddr: command.ieeeAddr,
  };
  if (command.type === 'AdoptCandidate') {
    return [
      {
        type: 'CandidateAdopted',
        data: { ...common, state: 'adopted', deviceId: command.deviceId, adoptedAt: command.at },
      },
    ];
  }
  return [
    {
      type: 'CandidateRejected',
      data: { ...common, state: 'rejected', deviceId: null, rejectedAt: command.at },
    },
  ];
}

function withCandidate(
  state: PairingState,
  sessionId: string,
  ieeeAddr: string,
  change: (existing: CandidateRecord | undefined) => CandidateRecord | undefined,
): PairingState {
  const session = state.sessions.get(sessionId);
  if (!session) return state;
  const candidate = change(session.candidates.get(ieeeAddr));
  if (!candidate) return state;
  const candidates = new Map(session.candidates);
  candidates.set(ieeeAddr, candidate);
  const sessions = new Map(state.sessions);
  sessions.set(sessionId, { ...session, candidates });
  return { ...state, sessions };
}
