import type { CapabilityValue } from '../catalogue/index.js';
import type { CancelReason, CommandEvent, CommandMode, CommandStatus } from './command-events.js';
import { FINAL_COMMAND_STATUSES } from './command-events.js';
import type { DeviceEvent } from '../devices/events.js';
import type { DeviceProfile, DeviceStatus } from '../devices/lifecycle.js';
import type { Actor } from '../events/actor.js';
import type { GrantEvent } from './grant-events.js';

/**
 * The control state of one device: everything a decision on its stream (`device-<publicId>`) needs, folded
 * from every event type that stream carries (registration, lifecycle, profile, grants, commands and S3
 * challenges). The safety gate, the grant/profile/lifecycle deciders and command delivery (sends, acks,
 * TTL expiry) all decide over this one state, so a decision always sees the facts the others recorded.
 *
 * The fold is total: an event that does not apply (a second outcome for a command, a grant event before
 * registration) leaves the state as it was, because recorded facts are never refused on replay.
 */
export type ControlEvent = DeviceEvent | GrantEvent | CommandEvent;

/** Who made a change and when; absent on facts recorded before the control plane existed. */
interface Change {
  readonly by?: Actor;
  readonly at?: string;
  readonly reason?: string;
}

/** The device as it registered (its profile moves on separately). */
type Registration = Omit<Extract<DeviceEvent, { type: 'DeviceRegistered' }>['data'], 'profile'>;

/**
 * denied: the explicit "no" adoption records; granted: write enabled; revoked: write taken back.
 * A writable capability with no record at all reads as no grant, which the gate refuses the same way.
 */
export type GrantState = 'denied' | 'granted' | 'revoked';

interface GrantRecord extends Change {
  readonly capability: string;
  readonly state: GrantState;
}

interface CommandAttempt {
  readonly attempt: number;
  readonly agentId: string;
  readonly sentAt: string;
}

/** How a command ended (set with its final status). */
interface CommandOutcome {
  readonly at: string;
  /** CommandFailed's reason. */
  readonly reason?: string;
  readonly detail?: string;
  readonly supersededBy?: string;
  readonly cancelReason?: CancelReason;
  readonly by?: Actor;
}

export interface CommandRecord {
  readonly commandId: string;
  readonly capability: string;
  readonly value: CapabilityValue;
  readonly mode: CommandMode;
  readonly ttlSeconds: number;
  readonly status: CommandStatus;
  readonly acceptedAt: string;
  readonly expiresAt: string;
  readonly by: Actor;
  readonly idempotencyKey?: string;
  readonly requestHash: string;
  readonly challengeId?: string;
  /** The latest send; undefined while queued. */
  readonly lastAttempt?: CommandAttempt;
  readonly outcome?: CommandOutcome;
  /** Acks that arrived after the outcome and were recorded without effect. */
  readonly ignoredAcks: number;
}

export interface ChallengeRecord {
  readonly challengeId: string;
  readonly clientId: string;
  readonly capability: string;
  readonly value: CapabilityValue;
  /** Absent on a challenge recorded before mode and TTL were part of its terms: it matches no command. */
  readonly mode?: CommandMode;
  readonly ttlSeconds?: number;
  readonly issuedAt: string;
  readonly expiresAt: string;
  /** The device's controlChanges when it was issued: any change since voids it. */
  readonly controlChangesAtIssue: number;
  /** The command that consumed it; a challenge is single use. */
  readonly consumedBy?: string;
}

export interface DeviceControlState {
  /** Undefined until DeviceRegistered: the device does not exist. */
  readonly registration: Registration | undefined;
  readonly status: DeviceStatus;
  readonly statusChange: Change;
  readonly profile: DeviceProfile;
  readonly profileChange: Change;
  /** Keyed by capability. */
  readonly grants: ReadonlyMap<string, GrantRecord>;
  /** Keyed by command id, in acceptance order. */
  readonly commands: ReadonlyMap<string, CommandRecord>;
  /** Idempotency key -> command id, for the commands accepted on this device. */
  readonly idempotencyKeys: ReadonlyMap<string, string>;
  /** Every S3 challenge issued for the device, consumed ones included (so a reuse is told apart). */
  readonly challenges: ReadonlyMap<string, ChallengeRecord>;
  /**
   * How many registration, lifecycle, profile and grant facts the stream holds. An S3 challenge answers
   * only the device as it stood when it was issued: a revoke and re-grant, or a quarantine and release,
   * leave the device looking the same, but this count has moved on.
   */
  readonly controlChanges: number;
}

const PENDING_COMMAND_STATUSES: readonly CommandStatus[] = ['queued', 'sent'];

export function isPending(command: Pick<CommandRecord, 'status'>): boolean {
  return PENDING_COMMAND_STATUSES.includes(command.status);
}

function isFinal(command: Pick<CommandRecord, 'status'>): boolean {
  return FINAL_COMMAND_STATUSES.includes(command.status);
}

/** Pending commands (queued or sent), in acceptance order, optionally for one capability only. */
export function pendingCommands(state: DeviceControlState, capability?: string): CommandRecord[] {
  return [...state.commands.values()].filter(
    (c) => isPending(c) && (capability === undefined || c.capability === capability),
  );
}

/** True when write is enabled for exactly this (device, capability) pair. */
export function hasGrant(state: DeviceControlState, capability: string): boolean {
  return state.grants.get(capability)?.state === 'granted';
}

export function initialControlState(): DeviceControlState {
  return {
    registration: undefined,
    status: 'active',
    statusChange: {},
    profile: 'draft',
    profileChange: {},
    grants: new Map(),
    commands: new Map(),
    idempotencyKeys: new Map(),
    challenges: new Map(),
    controlChanges: 0,
  };
}

export function evolveControl(state: DeviceControlState, event: ControlEvent): DeviceControlState {
  const next = evolveFacts(state, event);
  return CONTROL_CHANGES.has(event.type) ? { ...next, controlChanges: state.controlChanges + 1 } : next;
}

/** The facts that decide whether the device may be commanded: each one voids the S3 challenges before it. */
const CONTROL_CHANGES: ReadonlySet<ControlEvent['type']> = new Set([
  'DeviceRegistered',
  'DeviceLifecycleChanged',
  'DeviceProfileVerified',
  'DeviceProfileDowngraded',
  'CapabilityWriteDenied',
  'CapabilityWriteGranted',
  'CapabilityWriteRevoked',
]);

function evolveFacts(state: DeviceControlState, event: ControlEvent): DeviceControlState {
  switch (event.type) {
    case 'DeviceRegistered': {
      const { profile, ...data } = event.data;
      return { ...state, registration: data, status: 'active', profile };
    }
    case 'DeviceLifecycleChanged': {
      const { status, ...change } = event.data;
      return { ...state, status, statusChange: changeOf(change) };
    }
    case 'DeviceProfileVerified':
      return { ...state, profile: 'verified', profileChange: changeOf(event.data) };
    case 'DeviceProfileDowngraded':
      return { ...state, profile: 'draft', profileChange: changeOf(event.data) };
    case 'CapabilityWriteDenied':
      return withGrant(state, { capability: event.data.capability, state: 'denied' });
    case 'CapabilityWriteGranted':
    case 'CapabilityWriteRevoked': {
      const { capability, by, at } = event.data;
      const granted = event.type === 'CapabilityWriteGranted';
      return withGrant(state, { capability, state: granted ? 'granted' : 'revoked', by, at });
    }
    case 'CommandChallengeIssued': {
      const { deviceId: _d, projectId: _p, ...terms } = event.data;
      const challenges = new Map(state.challenges);
      challenges.set(terms.challengeId, { ...terms, controlChangesAtIssue: state.controlChanges });
      return { ...state, challenges };
    }
    case 'CommandAccepted':
      return accepted(state, event.data);
    case 'CommandSent': {
      const { commandId, agentId, attempt, sentAt } = event.data;
      return withCommand(state, commandId, (c) =>
        isPending(c) ? { ...c, status: 'sent', lastAttempt: { attempt, agentId, sentAt } } : c,
      );
    }
    case 'CommandSucceeded':
      return ended(state, event.data.commandId, 'succeeded', outcomeOf(event.data));
    case 'CommandFailed':
      return ended(state, event.data.commandId, 'failed', outcomeOf(event.data));
    case 'CommandExpired':
      return ended(state, event.data.commandId, 'expired', { at: event.data.at });
    case 'CommandSuperseded':
      return ended(state, event.data.commandId, 'superseded', {
        at: event.data.at,
        supersededBy: event.data.supersededBy,
      });
    case 'CommandCancelled':
      return ended(state, event.data.commandId, 'cancelled', {
        at: event.data.at,
        cancelReason: event.data.reason,
        by: event.data.by,
      });
    case 'CommandAckIgnored':
      return withCommand(state, event.data.commandId, (c) => ({ ...c, ignoredAcks: c.ignoredAcks + 1 }));
    default:
      return state; // a later feature's event on this stream
  }
}

type Accepted = Extract<CommandEvent, { type: 'CommandAccepted' }>['data'];

function accepted(state: DeviceControlState, data: Accepted): DeviceControlState {
  if (state.commands.has(data.commandId)) return state;
  const { deviceId: _d, projectId: _p, challengeId, ...rest } = data;
  const record: CommandRecord = {
    ...rest,
    ...(challengeId === undefined ? {} : { challengeId }),
    status: 'queued',
    ignoredAcks: 0,
  };
  const commands = new Map(state.commands);
  commands.set(data.commandId, record);
  const idempotencyKeys = new Map(state.idempotencyKeys);
  if (data.idempotencyKey !== undefined) idempotencyKeys.set(data.idempotencyKey, data.commandId);
  const challenges = new Map(state.challenges);
  const challenge = challengeId === undefined ? undefined : state.challenges.get(challengeId);
  if (challenge) challenges.set(challenge.challengeId, { ...challenge, consumedBy: data.commandId });
  return { ...state, commands, idempotencyKeys, challenges };
}

function ended(
  state: DeviceControlState,
  commandId: string,
  status: CommandStatus,
  outcome: CommandOutcome,
): DeviceControlState {
  // The first outcome stands; a later one (a late ack, a racing expiry) changes nothing.
  return withCommand(state, commandId, (c) => (isFinal(c) ? c : { ...c, status, outcome }));
}

function withCommand(
  state: DeviceControlState,
  commandId: string,
  change: (command: CommandRecord) => CommandRecord,
): DeviceControlState {
  const current = state.commands.get(commandId);
  if (!current) return state;
  const next = change(current);
  if (next === current) return state;
  const commands = new Map(state.commands);
  commands.set(commandId, next);
  return { ...state, commands };
}

function withGrant(state: DeviceControlState, record: GrantRecord): DeviceControlState {
  const grants = new Map(state.grants);
  grants.set(record.capability, record);
  return { ...state, grants };
}

function changeOf(data: { by?: Actor; at?: string; reason?: string }): Change {
  return {
    ...(data.by === undefined ? {} : { by: data.by }),
    ...(data.at === undefined ? {} : { at: data.at }),
    ...(data.reason === undefined ? {} : { reason: data.reason }),
  };
}

function outcomeOf(data: { at: string; reason?: string; detail?: string }): CommandOutcome {
  return {
    at: data.at,
    ...(data.reason === undefined ? {} : { reason: data.reason }),
    ...(data.detail === undefined ? {} : { detail: data.detail }),
  };
}
