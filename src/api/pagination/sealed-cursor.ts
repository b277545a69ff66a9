import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * An opaque cursor: the payload sealed with AES-256-GCM under a server key, bound to a context (the
 * project) as additional data. The client cannot read it, and any change to it, or its use in another
 * context, fails authentication. Layout, base64url: version (1) | iv (12) | ciphertext | tag (16).
 */
const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * `iv`: random unless given. Only a caller that needs the same token for the same payload gives one, and
 * it must be a synthetic IV (derived from the context and the payload under a key of its own), never a
 * counter or a constant: GCM under one key must never see one IV with two different plaintexts.
 */
export function sealCursor(
  key: Buffer,
  context: string,
  payload: Buffer,
  iv: Buffer = randomBytes(IV_BYTES),
): string {
  if (iv.length !== IV_BYTES) throw new RangeError(`a cursor IV is ${IV_BYTES} bytes`);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const body = Buffer.concat([cipher.update(payload), cipher.final()]);
  return Buffer.concat([Buffer.of(VERSION), iv, body, cipher.getAuthTag()]).toString('base64url');
}

/** The payload, or undefined for anything this server did not seal for this context. */
export function openCursor(key: Buffer, context: string, cursor: string): Buffer | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const raw = Buffer.from(cursor, 'base64url');
  if (raw.length < 1 + IV_BYTES + TAG_BYTES || raw[0] !== VERSION) return undefined;
  // Base64 ignores the spare bits of its last character: only the spelling we issue is one of ours.
  if (raw.toString('base64url') !== cursor) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(1, 1 + IV_BYTES));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([
      decipher.update(raw.subarray(1 + IV_BYTES, raw.length - TAG_BYTES)),
      decipher.final(),
    ]);
  } catch {
    return undefined;
  }
}
