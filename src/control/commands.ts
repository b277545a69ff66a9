import { createHash, randomUUID } from 'node:crypto';
import {
  CHALLENGE_SECONDS,
  TTL_SECONDS_MAX,
  TTL_SECONDS_MIN,
  previousAcceptance,
  type CommandRecord,
  type ControlKeyEvent,
  type RequestCommand,
} from '../domain/control/index.js';
import { Conflict, DomainError, MissingScope, Refusal } from '../domain/errors.js';
import { WrongExpectedRevisionError, type EventStore, type StreamAppend } from '../eventstore/port.js';
import { newChallengeId, newCommandId } from '../registry/ids.js';
import { decideOnDevice, readControlState, type Metadata } from './device-stream.js';

/** The request as the API read it: the body's fields unchecked (the decider checks them), and who asks. */
export type CommandRequest = Pick<
  RequestCommand,
  | 'projectId'
  | 'clientId'
  | 'scopes'
  | 'deviceId'
  | 'value'
  | 'mode'
  | 'ttlSeconds'
  | 'confirm'
  | 'challengeId'
  | 'idempotencyKey'
> & { readonly capabilityKey: string; readonly now: Date };

export interface CommandAnswer {
  readonly command: CommandRecord & { readonly deviceId: string };
  /** True when an earlier request with the same idempotency key and content had been accepted. */
  readonly replayed: boolean;
  /** Position of the CommandAccepted just recorded; undefined for a replay. */
  readonly position: string | undefined;
}

/**
 * POST /v1/devices/{publicId}/commands. The gate decides on the device's stream at the revision the append
 * expects; with an idempotency key, the same append claims the key on its (project, key) stream, so of
 * concurrent requests with one key exactly one is accepted and every other is answered from the claim:
 * the same command for the same content, a conflict for other content.
 *
 * A key seen before on this device is answered from the device's own stream. The claim is read only when
 * the decision is not an acceptance (a refusal, a challenge): a key claimed on another device answers as
 * before (409, or the replay), whatever this device would have said. An acceptance needs no read: its
 * append fails on an existing claim, and the claim is read then.
 *
 * Throws MissingScope (403 without reasons: S3 without commands:high_risk), Refusal (403 with reasons; for a
 * first S3 request with a `challenge`), InvalidInput (422) or Conflict (409 idempotency_key_reused).
 */
export async function requestCommand(
  store: EventStore,
  request: CommandRequest,
  metadata: Metadata = {},
): Promise<CommandAnswer> {
  const requestHash = hashOf(request);
  const keyStream =
    request.idempotencyKey === undefined
      ? undefined
      : idempotencyStreamName(request.projectId, request.idempotencyKey);
  try {
    return await decideCommand(store, request, requestHash, keyStream, metadata);
  } catch (error) {
    // A missing scope answers before the idempotency key is looked at (docs/commands.md, Order of answers).
    const claimMayAnswer =
      error instanceof ClaimToBeRead ||
      (error instanceof DomainError && !(error instanceof MissingScope)) ||
      (error instanceof WrongExpectedRevisionError && error.streamName === keyStream);
    if (keyStream && claimMayAnswer) {
      const earlier = await answerFromClaim(store, keyStream, requestHash);
      if (earlier) return earlier;
      if (error instanceof ClaimToBeRead)
        return decideCommand(store, request, requestHash, undefined, metadata);
    }
    throw error;
  }
}

/** Thrown before recording a decision that is not an acceptance while the key's claim is still unread. */
class ClaimToBeRead extends Error {}

/** The decision on the device; `keyStream` undefined once the key is known to be unclaimed (or absent). */
async function decideCommand(
  store: EventStore,
  request: CommandRequest,
  requestHash: string,
  keyStream: string | undefined,
  metadata: Metadata,
): Promise<CommandAnswer> {
  const at = request.now.toISOString();
  const commandId = newCommandId();
  const decided = await decideOnDevice(
    store,
    request.deviceId,
    {
      type: 'RequestCommand',
      projectId: request.projectId,
      deviceId: request.deviceId,
      clientId: request.clientId,
      scopes: request.scopes,
      by: { kind: 'client', clientId: request.clientId },
      at,
      capability: request.capabilityKey,
      value: request.value,
      mode: request.mode,
      ttlSeconds: request.ttlSeconds,
      ...(request.confirm === undefined ? {} : { confirm: request.confirm }),
      ...(request.challengeId === undefined ? {} : { challengeId: request.challengeId }),
      ...(request.idempotencyKey === undefined ? {} : { idempotencyKey: request.idempotencyKey }),
      requestHash,
      newCommandId: commandId,
      newChallengeId: newChallengeId(),
      expiresAt: expiry(request.now, request.ttlSeconds),
      challengeExpiresAt: new Date(request.now.getTime() + CHALLENGE_SECONDS * 1000).toISOString(),
    },
    metadata,
    (events) => {
      if (!keyStream || events.length === 0) return { result: undefined };
      if (events[0]?.type !== 'CommandAccepted') throw new ClaimToBeRead();
      return {
        alongside: [claim(keyStream, request, requestHash, commandId, at, metadata)],
        result: undefined,
      };
    },
  );
  const [first] = decided.events;
  if (first?.type === 'CommandChallengeIssued') {
    throw new Refusal(['challenge_required'], {
      challenge: { challengeId: first.data.challengeId, expiresAt: first.data.expiresAt },
    });
  }
  if (first?.type === 'CommandAccepted') {
    const command = decided.state.commands.get(commandId)!;
    return {
      command: { ...command, deviceId: request.deviceId },
      replayed: false,
      position: decided.appended[0]!.position,
    };
  }
  // Nothing recorded and nothing thrown: an identical repeat of a command accepted on this device.
  const previous = previousAcceptance(decided.state, request)!;
  return { command: { ...previous, deviceId: request.deviceId }, replayed: true, position: undefined };
}

/** One command of a device, as its stream tells it now (the write side's view, for answers). */
async function findCommandOnDevice(
  store: EventStore,
  deviceId: string,
  commandId: string,
): Promise<CommandRecord | undefined> {
  return (await readControlState(store, deviceId)).commands.get(commandId);
}

const idempotencyStreamName = (projectId: string, key: string) =>
  `command-key-${sha256(`${projectId}\u0000${key}`)}`;

/**
 * What makes two requests "the same" for an idempotency key: device, capability, value, mode and TTL.
 * confirm and challengeId are the ceremony around a command, not its content.
 */
function hashOf(request: CommandRequest): string {
  return sha256(
    JSON.stringify([
      request.deviceId,
      request.capabilityKey,
      request.value ?? null,
      request.mode,
      request.ttlSeconds ?? null,
    ]),
  );
}

async function answerFromClaim(
  store: EventStore,
  keyStream: string,
  requestHash: string,
): Promise<CommandAnswer | undefined> {
  const [recorded] = await store.readStream(keyStream, { maxCount: 1 });
  if (!recorded) return undefined;
  const claimed = recorded.data as ControlKeyEvent['data'];
  if (claimed.requestHash !== requestHash) throw new Conflict('idempotency_key_reused');
  const command = await findCommandOnDevice(store, claimed.deviceId, claimed.commandId);
  return { command: { ...command!, deviceId: claimed.deviceId }, replayed: true, position: undefined };
}

function claim(
  keyStream: string,
  request: CommandRequest,
  requestHash: string,
  commandId: string,
  at: string,
  metadata: Metadata,
): StreamAppend {
  const data: ControlKeyEvent['data'] = {
    projectId: request.projectId,
    idempotencyKey: request.idempotencyKey!,
    requestHash,
    deviceId: request.deviceId,
    commandId,
    at,
  };
  return {
    streamName: keyStream,
    events: [{ id: randomUUID(), type: 'CommandIdempotencyKeyClaimed', data, metadata }],
    expectedRevision: 'no_stream',
  };
}

/** `now` plus a valid ttlSeconds; for anything else the decider refuses the request before using it. */
function expiry(now: Date, ttl: unknown): string {
  const valid =
    typeof ttl === 'number' && Number.isInteger(ttl) && ttl >= TTL_SECONDS_MIN && ttl <= TTL_SECONDS_MAX;
  return new Date(now.getTime() + (valid ? ttl : 0) * 1000).toISOString();
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
