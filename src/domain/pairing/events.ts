import { z } from 'zod';
import { defineEvent, type DomainEvent } from '../events/definition.js';

/**
 * Facts of a hub's pairing stream (`pairing-<hubId>`). Every event that changes a window or a candidate
 * carries the spec's pairing_update fields as they are after the change, so the live stream can send its
 * data as it is: sessionId, hubId, ieeeAddr (null for a change of the window itself), state (the window's
 * state when ieeeAddr is null, the candidate's otherwise) and deviceId (null until adopted). projectId is
 * there for tenancy; the live stream drops it.
 */
const update = {
  sessionId: z.string(),
  hubId: z.string(),
  projectId: z.string(),
};

export const WINDOW_STATES = ['open', 'closed'] as const;
export type WindowState = (typeof WINDOW_STATES)[number];
export const CANDIDATE_STATES = ['pending', 'adopted', 'rejected'] as const;
export type CandidateState = (typeof CANDIDATE_STATES)[number];
export const CLOSE_REASONS = ['deadline', 'closed_by_client'] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];

const PairingWindowOpened = defineEvent(
  'PairingWindowOpened',
  z.object({
    ...update,
    ieeeAddr: z.null(),
    state: z.literal('open'),
    deviceId: z.null(),
    openedAt: z.string(),
    closesAt: z.string(),
  }),
);

const PairingWindowClosed = defineEvent(
  'PairingWindowClosed',
  z.object({
    ...update,
    ieeeAddr: z.null(),
    state: z.literal('closed'),
    deviceId: z.null(),
    reason: z.enum(CLOSE_REASONS),
    closedAt: z.string(),
  }),
);

/** state is `rejected` when the address is remembered as rejected on this hub: it stays refused. */
const CandidateJoined = defineEvent(
  'CandidateJoined',
  z.object({
    ...update,
    ieeeAddr: z.string(),
    state: z.enum(['pending', 'rejected']),
    deviceId: z.null(),
    manufacturer: z.string(),
    productModel: z.string(),
    /** What the agent found when it interviewed the device: catalogue keys. */
    capabilities: z.array(z.string()),
    joinedAt: z.string(),
  }),
);

const CandidateAdopted = defineEvent(
  'CandidateAdopted',
  z.object({
    ...update,
    ieeeAddr: z.string(),
    state: z.literal('adopted'),
    /** The new device's public id. */
    deviceId: z.string(),
    adoptedAt: z.string(),
  }),
);

const CandidateRejected = defineEvent(
  'CandidateRejected',
  z.object({
    ...update,
    ieeeAddr: z.string(),
    state: z.literal('rejected'),
    deviceId: z.null(),
    rejectedAt: z.string(),
  }),
);

/** An operator lifted the hub's memory of a rejection: the address may join as a candidate again. */
const CandidateRejectionCleared = defineEvent(
  'CandidateRejectionCleared',
  z.object({ hubId: z.string(), projectId: z.string(), ieeeAddr: z.string(), clearedAt: z.string() }),
);

export const pairingEvents = [
  PairingWindowOpened,
  PairingWindowClosed,
  CandidateJoined,
  CandidateAdopted,
  CandidateRejected,
  CandidateRejectionCleared,
] as const;

export type PairingEvent =
  | DomainEvent<typeof PairingWindowOpened>
  | DomainEvent<typeof PairingWindowClosed>
  | DomainEvent<typeof CandidateJoined>
  | DomainEvent<typeof CandidateAdopted>
  | DomainEvent<typeof CandidateRejected>
  | DomainEvent<typeof CandidateRejectionCleared>;

/** The types the live stream sends as `pairing_update` frames. */
export const PAIRING_UPDATE_TYPES = [
  'PairingWindowOpened',
  'PairingWindowClosed',
  'CandidateJoined',
  'CandidateAdopted',
  'CandidateRejected',
] as const;

export interface PairingUpdate {
  readonly sessionId: string;
  readonly hubId: string;
  readonly ieeeAddr: string | null;
  readonly state: WindowState | CandidateState;
  readonly deviceId: string | null;
}

/** The data of the `pairing_update` frame for an event, or undefined for an event that is not one. */
export function pairingUpdateOf(event: PairingEvent): PairingUpdate | undefined {
  if (event.type === 'CandidateRejectionCleared') return undefined;
  const { sessionId, hubId, ieeeAddr, state, deviceId } = event.data;
  return { sessionId, hubId, ieeeAddr, state, deviceId };
}
