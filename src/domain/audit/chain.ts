import { CHECKPOINT_FORMAT } from './checkpoint-events.js';

/**
 * The audit chain of a project: link n commits to link n-1 and to the n-th chained event of the project, in
 * the store's global order. Changing, removing, adding or reordering any event changes every link after it,
 * so one signed link (a checkpoint) vouches for the whole history before it.
 *
 * What a link commits to, and how it is encoded, is a format auditors re-implement
 * (examples/audit-verifier): SHA-256, lowercase hex, over length-prefixed UTF-8 fields, so no two different
 * events encode alike whatever characters they hold. docs/audit.md states it field by field. The hash
 * function comes in as an argument (the domain imports no crypto): SHA-256 of the UTF-8 text, in hex.
 */
export const CHAIN_FORMAT = 'devcloud-audit-chain/1';

export type Sha256Hex = (text: string) => string;

/** What of an event the chain commits to. */
export interface ChainedEvent {
  /** The store's position of the event (opaque, as the store hands it out). */
  readonly position: string;
  readonly type: string;
  readonly streamName: string;
  /** The store's recording time, as an ISO 8601 instant in milliseconds. */
  readonly recordedAt: string;
  /** The event's data exactly as stored: JSON text. */
  readonly data: string;
}

/** The link before a project's first event: the chain starts from the format and the project's id. */
export function genesisLink(sha256: Sha256Hex, projectId: string): string {
  return sha256(field(CHAIN_FORMAT) + field('genesis') + field(projectId));
}

/** The event's own fingerprint, without the chain: equal digests mean equal events. */
export function eventDigest(sha256: Sha256Hex, event: ChainedEvent): string {
  return sha256(
    field(event.position) +
      field(event.type) +
      field(event.streamName) +
      field(event.recordedAt) +
      field(event.data),
  );
}

/** The link after `previous` for an event of this digest. */
export function nextLink(sha256: Sha256Hex, previous: string, digest: string): string {
  return sha256(field(CHAIN_FORMAT) + field(previous) + field(digest));
}

/** A field as `<UTF-8 byte length>:<text>`. */
function field(text: string): string {
  return `${utf8Length(text)}:${text}`;
}

// Most fields are ASCII, whose byte length is their length: one native scan instead of a loop per character.
const NON_ASCII = /[\u0080-\uffff]/;

function utf8Length(text: string): number {
  if (!NON_ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** A checkpoint's fingerprint, which the next checkpoint of its project names as `previous`. */
export function checkpointDigest(sha256: Sha256Hex, payload: string, signature: string): string {
  return sha256(field(CHECKPOINT_FORMAT) + field(payload) + field(signature));
}
