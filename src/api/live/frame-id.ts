/**
 * A live frame's id: the event-store position of the event it came from, the frame's index within that
 * event (a readings event yields one frame per reading), and the event's recorded time. Clients treat it as
 * opaque; the server decodes it to resume exactly after that frame and to say from when data was missed.
 *
 * Positions of both event stores are 32 lowercase hex digits that sort as global order, so an id is 48 hex
 * digits (position, 4 of index, 12 of milliseconds) and its first 36 (the key) sort in stream order.
 */
const ID_SHAPE = /^[0-9a-f]{48}$/;
const KEY_LENGTH = 36;
const LAST_INDEX = 0xffff;

export interface DecodedFrameId {
  readonly position: string;
  readonly index: number;
  readonly recordedAtMs: number;
  /** The part that orders frames: position then index. */
  readonly key: string;
}

export function frameId(position: string, index: number, recordedAtMs: number): string {
  if (index > LAST_INDEX) throw new RangeError(`frame index ${index} exceeds ${LAST_INDEX}`);
  return position + hex(index, 4) + hex(Math.max(0, Math.trunc(recordedAtMs)), 12);
}

export function decodeFrameId(id: string): DecodedFrameId | undefined {
  if (!ID_SHAPE.test(id)) return undefined;
  return {
    position: id.slice(0, 32),
    index: Number.parseInt(id.slice(32, 36), 16),
    recordedAtMs: Number.parseInt(id.slice(36), 16),
    key: id.slice(0, KEY_LENGTH),
  };
}

/** The key just past every frame of the event at `position`: a reader there has seen all of them. */
export const keyAfterPosition = (position: string): string => position + hex(LAST_INDEX, 4);

/** The key before every frame: an empty store, or a reader who has seen nothing. */
export const KEY_BEFORE_EVERYTHING = '0'.repeat(KEY_LENGTH);

/** True when a reader at `key` has seen only part of its event's frames (a resume must re-read it). */
export const isInsideEvent = (key: string): boolean => !key.endsWith(hex(LAST_INDEX, 4));

export const positionOfKey = (key: string): string => key.slice(0, 32);

function hex(value: number, width: number): string {
  return value.toString(16).padStart(width, '0');
}
