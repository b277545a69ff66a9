import { createHash, hash } from 'node:crypto';

/**
 * The event id of a readings message, derived from the message itself so a redelivery is recognised:
 * - with `seq`: sha256 of (agent id, device public id, seq). The agent promises never to reuse a seq for a
 *   device (docs/telemetry.md); a message it rebuilds from its own queue after a crash still matches.
 * - without: sha256 of (agent id, device public id, the payload bytes exactly as received).
 * The first 16 bytes become a UUID (version 8, RFC 9562 "custom"). Ids and the separator cannot collide:
 * agent and public ids never contain a newline. The derivation must never change: a message redelivered
 * across an upgrade would otherwise be stored twice (tests/ingress/readings-event-id.test.ts pins it).
 */
export function readingsEventId(message: {
  readonly agentId: string;
  readonly deviceId: string;
  readonly seq: number | undefined;
  readonly payload: Buffer;
}): string {
  const prefix = `dc/v1 readings\n${message.agentId}\n${message.deviceId}\n`;
  // One-shot hashing of the usual case: a Hash object per message was most of the id's cost (2.8 against
  // 0.64 µs, docs/performance.md).
  const hex =
    message.seq !== undefined
      ? hash('sha256', `${prefix}seq ${message.seq}`, 'hex')
      : createHash('sha256').update(prefix).update('payload ').update(message.payload).digest('hex');
  return uuidV8(hex);
}

/** The version nibble's place holds 8; the variant's top bits 10 (its hex digit one of 8, 9, a, b). */
function uuidV8(hex: string): string {
  const variant = VARIANT_DIGITS[Number.parseInt(hex[16]!, 16) & 0x3]!;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const VARIANT_DIGITS = '89ab';
