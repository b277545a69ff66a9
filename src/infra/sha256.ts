import { createHash } from 'node:crypto';

/** SHA-256 of a text's UTF-8 bytes, in lowercase hex: the hash the audit chain is made with. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
