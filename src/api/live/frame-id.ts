import { createHmac, hkdfSync } from 'node:crypto';
import { openCursor, sealCursor } from '../pagination/sealed-cursor.js';

/**
 * A live frame's id names the event-store position of the event it came from, the frame's index within
 * that event (a readings event yields one frame per reading) and the event's recorded time: the server
 * decodes it to resume exactly after that frame and to say from when data was missed. The store's positions
 * are global, so in the clear they would show one tenant how much every other writes; the id is therefore
 * sealed like a list cursor (sealed-cursor.ts: AES-256-GCM under a server key kept in PostgreSQL, the
 * project as additional data). Another project's id, or a changed one, fails to open: it is an unknown id.
 *
 * Unlike a cursor, the IV is synthetic: an HMAC of the project and the plaintext under a second key derived
 * from the same secret. The same frame of the same project then gets the same id on every stream, every
 * process and every resume, so clients that drop duplicates by id keep working. GCM with a repeated IV is
 * unsafe only for two different plaintexts under one IV; here an IV repeats only with its plaintext and
 * project (the same id again), and two different ones collide with the odds of a 96-bit HMAC collision.
 * What equal ids tell a client, that two frames are the same frame, it knows anyway.
 *
 * Inside the server a frame is ordered by its key: the position (32 lowercase hex digits in both event
 * stores, sorting as global order) and 4 hex digits of index.
 */
const FRAME_ID_KEY_NAME = 'live-frame-id';
const POSITION_BYTES = 16;
const PAYLOAD_BYTES = POSITION_BYTES + 2 + 6;
const KEY_LENGTH = 36;
const LAST_INDEX = 0xffff;

export interface DecodedFrameId {
  readonly position: string;
  readonly index: number;
  readonly recordedAtMs: number;
  /** The part that orders frames: position then index. */
  readonly key: string;
}

/** Seals and opens frame ids for one deployment; one per process, from its persisted secret. */
export class FrameIds {
  readonly #sealKey: Buffer;
  readonly #ivKey: Buffer;

  constructor(secret: Buffer) {
    // Two keys from one secret: the IV's HMAC key must not be the cipher's key.
    this.#sealKey = Buffer.from(hkdfSync('sha256', secret, '', 'live frame id: seal', 32));
    this.#ivKey = Buffer.from(hkdfSync('sha256', secret, '', 'live frame id: iv', 32));
  }

  /** With the deployment's secret for frame ids, kept in PostgreSQL like the cursors' (cursor-keys.ts). */
  static async load(keyFor: (name: string) => Promise<Buffer>): Promise<FrameIds> {
    return new FrameIds(await keyFor(FRAME_ID_KEY_NAME));
  }

  encode(projectId: string, position: string, index: number, recordedAtMs: number): string {
    if (index > LAST_INDEX) throw new RangeError(`frame index ${index} exceeds ${LAST_INDEX}`);
    const payload = Buffer.alloc(PAYLOAD_BYTES);
    if (payload.write(position, 0, 'hex') !== POSITION_BYTES || position.length !== 2 * POSITION_BYTES)
      throw new RangeError(`not an event-store position: ${position}`);
    payload.writeUInt16BE(index, POSITION_BYTES);
    payload.writeUIntBE(Math.max(0, Math.trunc(recordedAtMs)), POSITION_BYTES + 2, 6);
    const context = contextOf(projectId);
    const iv = createHmac('sha256', this.#ivKey).update(context).update(payload).digest().subarray(0, 12);
    return sealCursor(this.#sealKey, context, payload, iv);
  }

  /** The frame an id of this project names; undefined for anything else (another project's, changed, forged). */
  decode(projectId: string, id: string): DecodedFrameId | undefined {
    const payload = openCursor(this.#sealKey, contextOf(projectId), id);
    if (payload?.length !== PAYLOAD_BYTES) return undefined;
    const position = payload.toString('hex', 0, POSITION_BYTES);
    const index = payload.readUInt16BE(POSITION_BYTES);
    return {
      position,
      index,
      recordedAtMs: payload.readUIntBE(POSITION_BYTES + 2, 6),
      key: frameKey(position, index),
    };
  }
}

const contextOf = (projectId: string) => `live\u0000${projectId}`;

/** The key that orders a frame among all frames: its event's position, then its index in the event. */
export const frameKey = (position: string, index: number): string => position + hex(index, 4);

/** The key just past every frame of the event at `position`: a reader there has seen all of them. */
export const keyAfterPosition = (position: string): string => frameKey(position, LAST_INDEX);

/** The key before every frame: an empty store, or a reader who has seen nothing. */
export const KEY_BEFORE_EVERYTHING = '0'.repeat(KEY_LENGTH);

/** True when a reader at `key` has seen only part of its event's frames (a resume must re-read it). */
export const isInsideEvent = (key: string): boolean => !key.endsWith(hex(LAST_INDEX, 4));

export const positionOfKey = (key: string): string => key.slice(0, 32);

/** The index a frame id gives the head's position: past every frame of that event. */
export const LAST_FRAME_INDEX = LAST_INDEX;

function hex(value: number, width: number): string {
  return value.toString(16).padStart(width, '0');
}
