import { findCapability, type Capability } from '../catalogue/index.js';
import { COMMAND_MODES, type CancelReason, type CommandEvent, type CommandMode } from './command-events.js';
import type { Decider } from '../decider.js';
import { canMove, isDeviceStatus, type DeviceStatus } from '../devices/lifecycle.js';
import { Conflict, InvalidInput, NotFound, Refusal } from '../errors.js';
import type { Actor } from '../events/actor.js';
import type { ScopeName } from '../identity/scopes.js';
import { checkCommandScopes, checkSafetyGate } from './safety-gate.js';
import { isBefore } from './instants.js';
import {
  evolveControl,
  initialControlState,
  pendingCommands,
  type CommandRecord,
  type ControlEvent,
  type DeviceControlState,
} from './state.js';

/** ttlSeconds must be a whole number in this range; anything else is refused, never clamped. */
export const TTL_SECONDS_MIN = 1;
export const TTL_SECONDS_MAX = 86_400;
/** How long an S3 challenge can be answered. */
export const CHALLENGE_SECONDS = 60;

/** Common to every control-plane command: whose project asks, who exactly, and when. */
interface Caller {
  readonly projectId: string;
  readonly by: Actor;
  readonly at: string;
}

/** PUT capability-grants: write true enables, write false revokes. */
export interface SetGrant extends Caller {
  readonly type: 'SetGrant';
  readonly capability: string;
  readonly write: boolean;
}

/** Operator: verify a draft profile, or downgrade a verified one back to draft. */
interface SetProfile extends Omit<Caller, 'projectId'> {
  readonly type: 'SetProfile';
  readonly profile: 'verified' | 'draft';
  readonly reason?: string;
}

/** Operator: move the device through its lifecycle. */
interface SetLifecycle extends Omit<Caller, 'projectId'> {
  readonly type: 'SetLifecycle';
  readonly status: DeviceStatus;
  readonly reason?: string;
}

/** POST commands, behind the safety gate. Ids for what it may record come in with it. */
export interface RequestCommand extends Caller {
  readonly type: 'RequestCommand';
  readonly deviceId: string;
  readonly clientId: string;
  /** The scopes the caller's token carries (with those they imply). */
  readonly scopes: ReadonlySet<ScopeName>;
  readonly capability: string;
  readonly value: unknown;
  readonly mode: string;
  readonly ttlSeconds: unknown;
  readonly confirm?: boolean;
  readonly challengeId?: string;
  /** Undefined when the client sent none: the command is then never deduplicated. */
  readonly idempotencyKey?: string;
  /** A digest of what makes two requests "the same" (docs/commands.md, Idempotency). */
  readonly requestHash: string;
  readonly newCommandId: string;
  readonly newChallengeId: string;
  /** `at` plus ttlSeconds, and `at` plus CHALLENGE_SECONDS: time comes in, the domain does no clock maths. */
  readonly expiresAt: string;
  readonly challengeExpiresAt: string;
}

export type ControlCommand = SetGrant | SetProfile | SetLifecycle | RequestCommand;

/**
 * Every control decision about one device, over its control state:
 * - SetGrant: enabling S2/S3 on a draft profile is a Conflict and records nothing; S1 may be enabled on a
 *   draft profile but, like every class, needs a grant. A revoke cancels the pair's pending commands.
 * - SetProfile / SetLifecycle: a downgrade revokes the S2/S3 grants and cancels their pending commands; a
 *   move away from active cancels every pending command. Same decision, same append.
 * - RequestCommand: the caller's scopes first (MissingScope, 403 without reasons), then idempotency, then
 *   the gate. A refusal throws Refusal (403) or InvalidInput (422);
 *   a first S3 request that passes everything else records CommandChallengeIssued (the caller answers 403
 *   challenge_required with it); an acceptance records CommandAccepted and supersedes the pending desired
 *   commands of the capability. An identical repeat of an accepted request records nothing.
 */
export const controlDecider: Decider<ControlCommand, ControlEvent, DeviceControlState> = {
  initialState: initialControlState,
  evolve: evolveControl,
  decide(command, state) {
    switch (command.type) {
      case 'SetGrant':
        return setGrant(command, state);
      case 'SetProfile':
        return setProfile(command, state);
      case 'SetLifecycle':
        return setLifecycle(command, state);
      case 'RequestCommand':
        return requestCommand(command, state);
    }
  },
};

/** The accepted command an identical repeat of this request answers with, if any. */
export function previousAcceptance(
  state: DeviceControlState,
  command: Pick<RequestCommand, 'projectId' | 'idempotencyKey'>,
): CommandRecord | undefined {
  if (command.idempotencyKey === undefined || state.registration?.projectId !== command.projectId) {
    return undefined;
  }
  const commandId = state.idempotencyKeys.get(command.idempotencyKey);
  return commandId === undefined ? undefined : state.commands.get(commandId);
}

function registered(state: DeviceControlState, projectId?: string) {
  const device = state.registration;
  if (!device || (projectId !== undefined && device.projectId !== projectId)) throw new NotFound('device');
  return device;
}

/** A capability the request may name for a grant: in the catalogue, writable, and reported by the device. */
function grantableCapability(state: DeviceControlState, key: string): Capability {
  const capability = findCapability(key);
  if (!capability) throw new InvalidInput('unknown_capability', 'capabilityKey', 'invalid_value');
  if (!capability.writable)
    throw new InvalidInput('capability_not_writable', 'capabilityKey', 'invalid_value');
  if (!state.registration!.capabilities.includes(key)) {
    throw new InvalidInput('capability_not_on_device', 'capabilityKey', 'invalid_value');
  }
  return capability;
}

function setGrant(command: SetGrant, state: DeviceControlState): ControlEvent[] {
  const device = registered(state, command.projectId);
  const capability = grantableCapability(state, command.capability);
  const current = state.grants.get(capability.key)?.state;
  const pair = { deviceId: device.deviceId, projectId: device.projectId, capability: capability.key };
  if (!command.write) {
    if (current !== 'granted') return [];
    return [
      { type: 'CapabilityWriteRevoked', data: { ...pair, by: command.by, at: command.at } },
      ...cancel(state, pendingCommands(state, capability.key), 'grant_revoked', command),
    ];
  }
  if (current === 'granted') return [];
  if ((capability.safetyClass === 'S2' || capability.safetyClass === 'S3') && state.profile !== 'verified') {
    throw new Conflict('profile_not_verified', { capabilityKey: capability.key });
  }
  if (state.status === 'revoked' || state.status === 'retired') {
    throw new Conflict('device_lifecycle', { status: state.status });
  }
  return [{ type: 'CapabilityWriteGranted', data: { ...pair, by: command.by, at: command.at } }];
}

function setProfile(command: SetProfile, state: DeviceControlState): ControlEvent[] {
  const device = registered(state);
  if (command.profile === state.profile) return [];
  const change = {
    deviceId: device.deviceId,
    ...(command.reason === undefined ? {} : { reason: command.reason }),
    by: command.by,
    at: command.at,
  };
  if (command.profile === 'verified') return [{ type: 'DeviceProfileVerified', data: change }];
  const armed = (key: string) => {
    const safetyClass = findCapability(key)?.safetyClass;
    return safetyClass === 'S2' || safetyClass === 'S3';
  };
  const disarmed: ControlEvent[] = [...state.grants.values()]
    .filter((g) => g.state === 'granted' && armed(g.capability))
    .map((g) => ({
      type: 'CapabilityWriteRevoked',
      data: {
        deviceId: device.deviceId,
        projectId: device.projectId,
        capability: g.capability,
        by: command.by,
        at: command.at,
      },
    }));
  const pending = pendingCommands(state).filter((c) => armed(c.capability));
  return [
    { type: 'DeviceProfileDowngraded', data: change },
    ...disarmed,
    ...cancel(state, pending, 'profile_downgraded', command),
  ];
}

function setLifecycle(command: SetLifecycle, state: DeviceControlState): ControlEvent[] {
  const device = registered(state);
  if (!isDeviceStatus(command.status)) throw new InvalidInput('unknown_status', 'status');
  if (command.status === state.status) return [];
  if (!canMove(state.status, command.status)) {
    throw new Conflict('lifecycle_move_not_allowed', { from: state.status, to: command.status });
  }
  const changed: ControlEvent = {
    type: 'DeviceLifecycleChanged',
    data: {
      deviceId: device.deviceId,
      status: command.status,
      ...(command.reason === undefined ? {} : { reason: command.reason }),
      by: command.by,
      at: command.at,
    },
  };
  if (state.status !== 'active') return [changed];
  return [changed, ...cancel(state, pendingCommands(state), 'device_lifecycle', command)];
}

function cancel(
  state: DeviceControlState,
  commands: readonly CommandRecord[],
  reason: CancelReason,
  caller: { by: Actor; at: string },
): CommandEvent[] {
  const device = state.registration!;
  return commands.map((c) => ({
    type: 'CommandCancelled',
    data: {
      commandId: c.commandId,
      deviceId: device.deviceId,
      projectId: device.projectId,
      at: caller.at,
      reason,
      by: caller.by,
    },
  }));
}

function requestCommand(command: RequestCommand, state: DeviceControlState): ControlEvent[] {
  checkCommandScopes(command.capability, command.scopes);
  const previous = previousAcceptance(state, command);
  if (previous) {
    if (previous.requestHash !== command.requestHash) throw new Conflict('idempotency_key_reused');
    return [];
  }
  const mode = checkMode(command.mode);
  const ttlSeconds = checkTtl(command.ttlSeconds);
  checkChallengeApplies(command);
  const verdict = checkSafetyGate(state, command, { ...command, clientId: command.clientId });
  // Policy reasons answer 403 first: a value fix would not make the command acceptable. A pending S3
  // challenge alone does not hide a bad value, since a challenge is never issued for a value that fails.
  const blocking = verdict.reasons.filter((r) => r !== 'challenge_required');
  if (blocking.length > 0) throw new Refusal(verdict.reasons);
  if (verdict.valueFailure !== undefined)
    throw new InvalidInput(verdict.valueFailure, 'value', 'invalid_value');
  const device = state.registration!;
  const value = command.value as boolean | number | string;
  if (verdict.reasons.includes('challenge_required')) {
    return [
      {
        type: 'CommandChallengeIssued',
        data: {
          challengeId: command.newChallengeId,
          deviceId: device.deviceId,
          projectId: device.projectId,
          clientId: command.clientId,
          capability: command.capability,
          value,
          mode,
          ttlSeconds,
          issuedAt: command.at,
          expiresAt: command.challengeExpiresAt,
        },
      },
    ];
  }
  const accepted: ControlEvent = {
    type: 'CommandAccepted',
    data: {
      commandId: command.newCommandId,
      deviceId: device.deviceId,
      projectId: device.projectId,
      capability: command.capability,
      value,
      mode,
      ttlSeconds,
      acceptedAt: command.at,
      expiresAt: command.expiresAt,
      by: command.by,
      ...(command.idempotencyKey === undefined ? {} : { idempotencyKey: command.idempotencyKey }),
      requestHash: command.requestHash,
      ...(verdict.safetyClass === 'S3' ? { challengeId: command.challengeId! } : {}),
    },
  };
  if (mode !== 'desired') return [accepted];
  // A newer setpoint replaces the older ones still pending (those already past their TTL are left to expire).
  const superseded: ControlEvent[] = pendingCommands(state, command.capability)
    .filter((c) => c.mode === 'desired' && isBefore(command.at, c.expiresAt))
    .map((c) => ({
      type: 'CommandSuperseded',
      data: {
        commandId: c.commandId,
        deviceId: device.deviceId,
        projectId: device.projectId,
        at: command.at,
        supersededBy: command.newCommandId,
      },
    }));
  return [accepted, ...superseded];
}

function checkMode(mode: string): CommandMode {
  if (!(COMMAND_MODES as readonly string[]).includes(mode)) throw new InvalidInput('invalid_mode', 'mode');
  return mode as CommandMode;
}

/**
 * Only S3 has a challenge to answer. A challengeId on an S1 or S2 command is refused rather than ignored: the
 * client believes it is confirming something, and it is not. An unknown or read-only capability is left to
 * the gate, which refuses it anyway.
 */
function checkChallengeApplies(command: RequestCommand): void {
  if (command.challengeId === undefined) return;
  const capability = findCapability(command.capability);
  if (capability?.writable && capability.safetyClass !== 'S3') {
    throw new InvalidInput('challenge_not_applicable', 'challengeId');
  }
}

function checkTtl(ttl: unknown): number {
  if (typeof ttl !== 'number' || !Number.isInteger(ttl))
    throw new InvalidInput('not_an_integer', 'ttlSeconds');
  if (ttl < TTL_SECONDS_MIN || ttl > TTL_SECONDS_MAX) throw new InvalidInput('out_of_range', 'ttlSeconds');
  return ttl;
}
