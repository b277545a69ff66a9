import { z } from 'zod';
import { actor } from '../events/actor.js';
import { defineEvent, type DomainEvent } from '../events/definition.js';

/**
 * A command's life, on its device's stream (`device-<publicId>`): accepted (queued) behind the safety gate
 * in the same append as the grant and lifecycle facts it relied on, then sent to the device's agent, then
 * exactly one outcome. Every event here is a `command_update` on the live stream.
 *
 *   queued ──► sent ──► succeeded | failed
 *     │          │
 *     └──────────┴────► expired | superseded | cancelled
 *
 * `desired` commands may be sent again (attempt > 1) until an outcome; `imperative` ones are sent at most once.
 */
export const COMMAND_MODES = ['desired', 'imperative'] as const;
export type CommandMode = (typeof COMMAND_MODES)[number];

export const COMMAND_STATUSES = [
  'queued',
  'sent',
  'succeeded',
  'failed',
  'expired',
  'superseded',
  'cancelled',
] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

/** The statuses after which nothing more happens to a command. */
export const FINAL_COMMAND_STATUSES: readonly CommandStatus[] = [
  'succeeded',
  'failed',
  'expired',
  'superseded',
  'cancelled',
];

/** The final status each outcome event leaves its command in. */
export const FINAL_STATUS_AFTER = {
  CommandSucceeded: 'succeeded',
  CommandFailed: 'failed',
  CommandExpired: 'expired',
  CommandSuperseded: 'superseded',
  CommandCancelled: 'cancelled',
} as const satisfies Record<string, CommandStatus>;

const CANCEL_REASONS = ['grant_revoked', 'device_lifecycle', 'profile_downgraded'] as const;
export type CancelReason = (typeof CANCEL_REASONS)[number];

const commandRef = { commandId: z.string(), deviceId: z.string(), projectId: z.string() };
const commandValue = z.union([z.boolean(), z.number(), z.string()]);

/**
 * Two-step ceremony for S3: the challenge a client must echo, bound to the whole command it was issued for
 * (client, device, capability, value, mode and TTL). mode and ttlSeconds are absent on challenges recorded
 * before they were part of the terms; such a challenge matches no command (docs/commands.md).
 */
export const CommandChallengeIssued = defineEvent(
  'CommandChallengeIssued',
  z.object({
    challengeId: z.string(),
    deviceId: z.string(),
    projectId: z.string(),
    clientId: z.string(),
    capability: z.string(),
    value: commandValue,
    mode: z.enum(COMMAND_MODES).optional(),
    ttlSeconds: z.number().int().optional(),
    issuedAt: z.string(),
    expiresAt: z.string(),
  }),
);

/** Passed the safety gate and queued: the 201 of POST /v1/devices/{publicId}/commands. */
const CommandAccepted = defineEvent(
  'CommandAccepted',
  z.object({
    ...commandRef,
    capability: z.string(),
    value: commandValue,
    mode: z.enum(COMMAND_MODES),
    ttlSeconds: z.number().int(),
    acceptedAt: z.string(),
    expiresAt: z.string(),
    by: actor,
    /**
     * The idempotency key as the client sent it (absent when it sent none: such a command is never
     * deduplicated), and a hash of the request it first came with.
     */
    idempotencyKey: z.string().optional(),
    requestHash: z.string(),
    /** Set for S3: the challenge this acceptance consumed (single use). */
    challengeId: z.string().optional(),
  }),
);

/** Published to the agent holding the device (QoS 1). attempt counts sends of a desired command. */
const CommandSent = defineEvent(
  'CommandSent',
  z.object({ ...commandRef, agentId: z.string(), attempt: z.number().int().positive(), sentAt: z.string() }),
);

/**
 * The agent whose ack an event records. Optional: events recorded before it was kept do not carry it; the
 * audit names the agent the command was last sent to for those, as it always did.
 */
const ackingAgent = { agentId: z.string().optional() };

export const CommandSucceeded = defineEvent(
  'CommandSucceeded',
  z.object({ ...commandRef, at: z.string(), ...ackingAgent, detail: z.string().optional() }),
);

export const CommandFailed = defineEvent(
  'CommandFailed',
  z.object({
    ...commandRef,
    at: z.string(),
    ...ackingAgent,
    reason: z.string(),
    detail: z.string().optional(),
  }),
);

/** The TTL ran out, by the server's clock, before an outcome. */
const CommandExpired = defineEvent('CommandExpired', z.object({ ...commandRef, at: z.string() }));

/** A newer desired command for the same capability took over. */
const CommandSuperseded = defineEvent(
  'CommandSuperseded',
  z.object({ ...commandRef, at: z.string(), supersededBy: z.string() }),
);

/** A revoke, a lifecycle change away from active or a profile downgrade ended a pending command. */
const CommandCancelled = defineEvent(
  'CommandCancelled',
  z.object({ ...commandRef, at: z.string(), reason: z.enum(CANCEL_REASONS), by: actor }),
);

/** An agent's ack that came after the command's outcome: kept for the record, it changes nothing. */
export const CommandAckIgnored = defineEvent(
  'CommandAckIgnored',
  z.object({
    ...commandRef,
    at: z.string(),
    ...ackingAgent,
    ackStatus: z.enum(['applied', 'failed']),
    outcome: z.enum(COMMAND_STATUSES),
    detail: z.string().optional(),
  }),
);

export const commandEvents = [
  CommandChallengeIssued,
  CommandAccepted,
  CommandSent,
  CommandSucceeded,
  CommandFailed,
  CommandExpired,
  CommandSuperseded,
  CommandCancelled,
  CommandAckIgnored,
] as const;

export type CommandEvent =
  | DomainEvent<typeof CommandChallengeIssued>
  | DomainEvent<typeof CommandAccepted>
  | DomainEvent<typeof CommandSent>
  | DomainEvent<typeof CommandSucceeded>
  | DomainEvent<typeof CommandFailed>
  | DomainEvent<typeof CommandExpired>
  | DomainEvent<typeof CommandSuperseded>
  | DomainEvent<typeof CommandCancelled>
  | DomainEvent<typeof CommandAckIgnored>;
