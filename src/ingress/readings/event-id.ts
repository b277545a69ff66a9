import { createHash } from 'node:crypto';

/**
 * The event id of a readings message, derived from the message itself so a redelivery is recognised:
 * - with `seq`: sha256 of (agent id, device public id, seq). The agent promises never to reuse a seq for a
 *   device (docs/telemetry.md); a message it rebuilds from its own queue after a crash still matches.
 * - without: sha256 of (agent id, device public id, the payload bytes exactly as received).
 * The first 16 bytes become a UUID (version 8, RFC 9562 "custom"). Ids and the separator cannot collide:
 * agent and public ids never contain a newline.
 */
export function readingsEventId(message: {
  readonly agentId: string;
  readonly deviceId: string;
  readonly seq: number | undefined;
  readonly payload: Buffer;
}): string {
  const hash = createHash('sha256').update(`dc/v1 readings\n${message.agentId}\n${message.deviceId}\n`);
  if (message.seq !== undefined) hash.update(`seq ${message.seq}`);
  else hash.update('payload ').update(message.payload);
  const bytes = hash.digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x80;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
