import { findCapability, validateCommandValue, type ValueRefusalReason } from '../catalogue/index.js';
import type { SafetyClass } from '../catalogue/index.js';
import { MissingScope } from '../errors.js';
import type { ScopeName } from '../identity/scopes.js';
import type { ChallengeRecord, DeviceControlState } from './state.js';
import { hasGrant } from './state.js';
import { isBefore } from './instants.js';

/**
 * The safety gate's refusal reasons: a closed list, served in `reasons[]` of a 403 (docs/commands.md).
 * Every condition that fails is listed, in this order, not only the first.
 */
export const REFUSAL_REASONS = [
  /** The key is not in the catalogue. */
  'capability_unknown',
  /** The key is in the catalogue but read-only (S0). */
  'capability_not_writable',
  /** No such device in the caller's project: missing and foreign devices read the same. */
  'device_not_addressable',
  /** The device is quarantined, suspended, revoked or retired. */
  'device_lifecycle',
  /** An S2 or S3 capability on a device whose catalogue profile is draft: it cannot be armed. */
  'profile_not_verified',
  /** No unrevoked write grant for exactly this (device, capability) pair. */
  'grant_missing',
  /** S2 and S3 need `"confirm": true`. */
  'confirm_required',
  /** S3 without a challengeId: answered with a fresh challenge when nothing else fails. */
  'challenge_required',
  /** The challengeId was never issued for this device. */
  'challenge_invalid',
  /** The challenge was already consumed by an accepted command (single use). */
  'challenge_reused',
  /** The challenge's short life is over. */
  'challenge_expired',
  /** The challenge was issued to another client. */
  'challenge_foreign',
  /** The challenge was issued for another command: another capability, value, mode or TTL. */
  'challenge_mismatch',
  /** A grant, profile or lifecycle change of the device was recorded after the challenge was issued. */
  'challenge_voided',
] as const;

type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** What the gate looks at in a command request. */
export interface GateRequest {
  readonly capability: string;
  readonly value: unknown;
  readonly mode: unknown;
  readonly ttlSeconds: unknown;
  readonly confirm?: boolean;
  readonly challengeId?: string;
}

/** Who asks, and when (the server's clock, as an ISO timestamp). */
export interface GateCaller {
  readonly projectId: string;
  readonly clientId: string;
  readonly at: string;
}

export interface GateVerdict {
  /** Every policy refusal that applies (403), in REFUSAL_REASONS order. */
  readonly reasons: readonly RefusalReason[];
  /** Set when the value fails the catalogue's type, range, enum or step (422). */
  readonly valueFailure: ValueRefusalReason | undefined;
  readonly safetyClass: SafetyClass | undefined;
}

/**
 * The scope an S3 capability needs besides commands:write. The spec checks it before the gate and before
 * anything about the device or the idempotency key, so it throws rather than joining the reasons: the answer
 * is 403 without reasons (docs/commands.md, "Order of answers", step 3), for any device.
 */
export function checkCommandScopes(capability: string, scopes: ReadonlySet<ScopeName>): void {
  if (findCapability(capability)?.safetyClass === 'S3' && !scopes.has('commands:high_risk')) {
    throw new MissingScope('commands:high_risk');
  }
}

/**
 * Spec, Commands rule 3, decided over the device's control state as of the append. Value failures are kept
 * apart from policy reasons because they answer 422, not 403 (rule 6); how the two combine is the command
 * decider's business.
 */
export function checkSafetyGate(
  state: DeviceControlState,
  request: GateRequest,
  caller: GateCaller,
): GateVerdict {
  const reasons = new Set<RefusalReason>();
  const capability = findCapability(request.capability);
  const valueCheck = validateCommandValue(request.capability, request.value);
  let valueFailure: ValueRefusalReason | undefined;
  if (!valueCheck.ok) {
    if (valueCheck.reason === 'unknown_capability') reasons.add('capability_unknown');
    else if (valueCheck.reason === 'capability_not_writable') reasons.add('capability_not_writable');
    else valueFailure = valueCheck.reason;
  }
  const safetyClass = capability?.safetyClass;
  const armed = safetyClass === 'S2' || safetyClass === 'S3';

  const device = state.registration;
  const addressable = device !== undefined && device.projectId === caller.projectId;
  if (!addressable) {
    // Nothing about a device outside the caller's project may show: only what the request itself implies.
    reasons.add('device_not_addressable');
  } else if (capability?.writable) {
    if (state.status !== 'active') reasons.add('device_lifecycle');
    if (armed && state.profile !== 'verified') reasons.add('profile_not_verified');
    if (!hasGrant(state, capability.key)) reasons.add('grant_missing');
  } else if (state.status !== 'active') {
    reasons.add('device_lifecycle');
  }
  if (armed && request.confirm !== true) reasons.add('confirm_required');
  if (safetyClass === 'S3') {
    if (request.challengeId === undefined) reasons.add('challenge_required');
    else if (!addressable) reasons.add('challenge_invalid');
    else {
      const challenge = state.challenges.get(request.challengeId);
      for (const reason of challengeFailures(state, challenge, request, caller)) reasons.add(reason);
    }
  }
  return {
    reasons: REFUSAL_REASONS.filter((r) => reasons.has(r)),
    valueFailure,
    safetyClass,
  };
}

/**
 * A challenge confirms one command on one device as it stood: the answer must repeat every term it was
 * issued for (a challenge without recorded mode and TTL matches nothing), and nothing that arms or holds
 * the device may have been recorded since.
 */
function challengeFailures(
  state: DeviceControlState,
  challenge: ChallengeRecord | undefined,
  request: GateRequest,
  caller: GateCaller,
): RefusalReason[] {
  if (challenge === undefined) return ['challenge_invalid'];
  const failures: RefusalReason[] = [];
  if (challenge.consumedBy !== undefined) failures.push('challenge_reused');
  if (!isBefore(caller.at, challenge.expiresAt)) failures.push('challenge_expired');
  if (challenge.clientId !== caller.clientId) failures.push('challenge_foreign');
  const sameCommand =
    challenge.capability === request.capability &&
    challenge.value === request.value &&
    challenge.mode === request.mode &&
    challenge.ttlSeconds === request.ttlSeconds;
  if (!sameCommand) failures.push('challenge_mismatch');
  if (challenge.controlChangesAtIssue !== state.controlChanges) failures.push('challenge_voided');
  return failures;
}
