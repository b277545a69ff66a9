import { z } from 'zod';
import {
  displaySafeText,
  isPublicId,
  PUBLIC_ID_PATTERN,
  storableText,
  withoutTrailingNul,
} from '../../domain/text.js';
import { isAgentId } from '../pki/agent-identity.js';
import { RejectedMessage } from '../rejected-message.js';

/**
 * The MQTT wire contract, version 1 (docs/mqtt.md). Everything an agent may publish or receive lives
 * under its own prefix, so an ACL decision is a string comparison plus a set lookup.
 */
const CONTRACT_VERSION = 'v1';
const TOPIC_ROOT = `dc/${CONTRACT_VERSION}/agents`;

export function agentPrefix(agentId: string): string {
  return `${TOPIC_ROOT}/${agentId}/`;
}

// ---- Uplink: the agent publishes ---------------------------------------------------------------

export type UplinkTopic =
  | { readonly kind: 'readings'; readonly agentId: string; readonly deviceId: string }
  | { readonly kind: 'deviceStatus'; readonly agentId: string; readonly deviceId: string }
  | { readonly kind: 'agentStatus'; readonly agentId: string }
  | { readonly kind: 'pairingCandidate'; readonly agentId: string }
  | { readonly kind: 'commandAck'; readonly agentId: string; readonly commandId: string };

type UplinkKind = UplinkTopic['kind'];

export const uplinkTopic = {
  readings: (agentId: string, deviceId: string) => `${agentPrefix(agentId)}devices/${deviceId}/readings`,
  deviceStatus: (agentId: string, deviceId: string) => `${agentPrefix(agentId)}devices/${deviceId}/status`,
  agentStatus: (agentId: string) => `${agentPrefix(agentId)}status`,
  pairingCandidate: (agentId: string) => `${agentPrefix(agentId)}pairing/candidates`,
  commandAck: (agentId: string, commandId: string) => `${agentPrefix(agentId)}commands/${commandId}/ack`,
} as const;

/** Parses a topic an agent published on. Anything that is not exactly one of the uplink shapes is undefined. */
export function parseUplinkTopic(topic: string): UplinkTopic | undefined {
  const levels = topic.split('/');
  if (levels[0] !== 'dc' || levels[1] !== CONTRACT_VERSION || levels[2] !== 'agents') return undefined;
  const agentId = levels[3];
  if (agentId === undefined || !isAgentId(agentId)) return undefined;
  const [a, b, c, extra] = levels.slice(4);
  if (extra !== undefined) return undefined;

  if (a === 'status' && b === undefined) return { kind: 'agentStatus', agentId };
  if (a === 'pairing' && b === 'candidates' && c === undefined) return { kind: 'pairingCandidate', agentId };
  if (a === 'devices' && b !== undefined && isPublicId(b)) {
    if (c === 'readings') return { kind: 'readings', agentId, deviceId: b };
    if (c === 'status') return { kind: 'deviceStatus', agentId, deviceId: b };
  }
  if (a === 'commands' && b !== undefined && isPublicId(b) && c === 'ack') {
    return { kind: 'commandAck', agentId, commandId: b };
  }
  return undefined;
}

const publicId = z.string().regex(PUBLIC_ID_PATTERN);
const timestamp = z.iso.datetime({ offset: true });
/** Canonical capability keys look like `environment.temperature`; the catalogue decides which exist. */
const capabilityKey = z
  .string()
  .max(64)
  .regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/);
const connectivity = z.enum(['online', 'offline']);

const readingsPayload = z.object({
  /** Agent-side sequence number; with the topic it makes redelivered batches recognisable. */
  seq: z.number().int().nonnegative().optional(),
  readings: z
    .array(
      z.object({
        capability: capabilityKey,
        value: z.union([z.number(), z.boolean(), storableText().max(256)]),
        deviceTime: timestamp.optional(),
      }),
    )
    .min(1)
    .max(500),
});

const deviceStatusPayload = z.object({
  state: connectivity,
  deviceTime: timestamp.optional(),
});

export const agentStatusPayload = z.object({
  state: connectivity,
  agentVersion: displaySafeText().max(64).optional(),
});

/**
 * A name a device reports about itself. Zigbee devices pad fixed-size string attributes with NULs, which
 * PostgreSQL cannot store: the padding is stripped (nothing else is touched, case included); what is left
 * must be a storable, non-empty string without control characters (operators read it in tables), else the
 * candidate is refused (acknowledged and dropped).
 */
const deviceReportedName = z
  .string()
  .max(256)
  .transform(withoutTrailingNul)
  .pipe(displaySafeText().min(1).max(128));

const pairingCandidatePayload = z.object({
  sessionId: publicId,
  /** EUI-64 of the joining radio, `0x` and 16 hex digits as zigbee2mqtt prints it. */
  ieeeAddr: z.string().regex(/^0x[0-9a-fA-F]{16}$/),
  manufacturer: deviceReportedName,
  model: deviceReportedName,
  capabilities: z.array(capabilityKey).max(64),
});

/**
 * The agent's outcome of one command. `deviceId` names the device the command was for: the broker checks
 * it is the agent's own, and the cloud finds the command on that device's stream.
 */
const commandAckPayload = z.object({
  deviceId: publicId,
  status: z.enum(['applied', 'failed']),
  detail: displaySafeText().max(512).optional(),
});

const uplinkPayloads = {
  readings: readingsPayload,
  deviceStatus: deviceStatusPayload,
  agentStatus: agentStatusPayload,
  pairingCandidate: pairingCandidatePayload,
  commandAck: commandAckPayload,
} as const;

export type UplinkPayloads = { [K in UplinkKind]: z.infer<(typeof uplinkPayloads)[K]> };

/**
 * Decodes an uplink payload (UTF-8 JSON) against its topic's schema. A payload that does not fit is the
 * agent's fault and will never fit, so it is refused with RejectedMessage rather than retried.
 */
export function parseUplinkPayload<T extends UplinkTopic>(
  topic: T,
  payload: Buffer,
): { topic: T; payload: UplinkPayloads[T['kind']] } {
  let json: unknown;
  try {
    json = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new RejectedMessage('invalid_json', `${topic.kind} payload is not JSON`);
  }
  const parsed = uplinkPayloads[topic.kind].safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(root)';
    throw new RejectedMessage(
      'invalid_payload',
      `${topic.kind} payload: ${where}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return { topic, payload: parsed.data as UplinkPayloads[T['kind']] };
}

// ---- Downlink: the cloud publishes, the agent subscribes to `<prefix>down/#` ---------------------

export const pairingDownPayload = z.discriminatedUnion('action', [
  z.object({ action: z.literal('permit'), sessionId: publicId, hubId: publicId, until: timestamp }),
  z.object({ action: z.literal('stop'), sessionId: publicId, hubId: publicId }),
]);

export const devicesDownPayload = z.discriminatedUnion('decision', [
  z.object({
    decision: z.literal('adopted'),
    sessionId: publicId,
    ieeeAddr: z.string().regex(/^0x[0-9a-fA-F]{16}$/),
    publicId,
  }),
  z.object({
    decision: z.literal('rejected'),
    sessionId: publicId,
    ieeeAddr: z.string().regex(/^0x[0-9a-fA-F]{16}$/),
  }),
]);

/**
 * `apply`: act on the device, then answer on `commands/{commandId}/ack`. A `desired` command may come
 * again with a higher `attempt` (a setpoint re-sent after a reconnect); an `imperative` one comes once.
 * `cancel`: the command ended without the agent (cancelled, superseded or expired): drop it if it has not
 * been applied yet. Nothing is undone on the device.
 */
export const commandsDownPayload = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('apply'),
    commandId: publicId,
    deviceId: publicId,
    capability: capabilityKey,
    value: z.union([z.number(), z.boolean(), z.string().max(256)]),
    mode: z.enum(['desired', 'imperative']),
    attempt: z.number().int().positive(),
    expiresAt: timestamp,
  }),
  z.object({
    action: z.literal('cancel'),
    commandId: publicId,
    deviceId: publicId,
    outcome: z.enum(['cancelled', 'superseded', 'expired']),
  }),
]);

const downlinkPayloads = {
  pairing: pairingDownPayload,
  devices: devicesDownPayload,
  commands: commandsDownPayload,
} as const;

export type DownlinkKind = keyof typeof downlinkPayloads;
export type DownlinkPayloads = { [K in DownlinkKind]: z.infer<(typeof downlinkPayloads)[K]> };

export function downlinkTopic(agentId: string, kind: DownlinkKind): string {
  return `${agentPrefix(agentId)}down/${kind}`;
}

/** The one subscription an agent needs. */
export function downlinkSubscription(agentId: string): string {
  return `${agentPrefix(agentId)}down/#`;
}

/** Validates and encodes a downlink payload; a bad one is a bug on the cloud side, so it throws. */
export function encodeDownlink<K extends DownlinkKind>(kind: K, payload: DownlinkPayloads[K]): Buffer {
  return Buffer.from(JSON.stringify(downlinkPayloads[kind].parse(payload)), 'utf8');
}
