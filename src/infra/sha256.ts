import { hash } from 'node:crypto';

/**
 * SHA-256 of a text's UTF-8 bytes, in lowercase hex: the hash the audit chain is made with. The one-shot
 * `hash` (Node 20.12+) costs about a third of createHash/update/digest on short texts, and verification
 * hashes twice per event.
 */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}
