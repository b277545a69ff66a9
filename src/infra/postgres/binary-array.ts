import { epochTime } from '../iso-time.js';

/**
 * One-dimensional arrays in PostgreSQL's binary form, for the batch statements' largest parameters. pg sends
 * a Buffer parameter as binary, and PostgreSQL then reads each element by its type's receive function,
 * where the text form (array-literal.ts) had it scan the array's text character by character and parse
 * every number and time from its digits: 18 % of the telemetry projector's PostgreSQL time in a replay
 * (docs/performance.md, "Array parameters in binary").
 *
 * The statement must cast the parameter to the array type written here (`$1::float8[]` for float8Array):
 * PostgreSQL refuses an array whose element type is not the one it expects. null and undefined are NULL.
 * A value the element type cannot hold exactly is refused with a RangeError before anything is sent.
 */

const OID = {
  int8: 20,
  int4: 23,
  text: 25,
  json: 114,
  float8: 701,
  timestamptz: 1184,
  uuid: 2950,
  jsonb: 3802,
};

// Milliseconds from the Unix epoch to PostgreSQL's, 2000-01-01 UTC.
const POSTGRES_EPOCH_MS = 946_684_800_000;
const TWO_TO_32 = 2 ** 32;
// PostgreSQL's timestamp range in microseconds since 2000: 4714-11-24 BC 00:00 UTC up to 294277-01-01 UTC.
const TIMESTAMP_MIN_US = -211_813_488_000_000_000n;
const TIMESTAMP_END_US = 9_223_371_331_200_000_000n;
// Strings up to this length are copied by a loop while they are ASCII (writeUtf8).
const SHORT_STRING = 64;
const DASH = 45;
// The value of each hexadecimal digit by its character code, -1 for any other character.
const HEX = Int8Array.from({ length: 128 }, (_, code) => {
  const digit = parseInt(String.fromCharCode(code), 16);
  return Number.isNaN(digit) ? -1 : digit;
});

type Nullable<T> = T | null | undefined;

/**
 * The array's header: one dimension, whether it holds a NULL, the element type, the length, lower bound 1.
 * Elements follow, each as its length (-1 for NULL) and its bytes.
 */
function writeHeader(view: DataView, elementOid: number, length: number, hasNull: boolean): void {
  view.setInt32(0, 1);
  view.setInt32(4, hasNull ? 1 : 0);
  view.setInt32(8, elementOid);
  view.setInt32(12, length);
  view.setInt32(16, 1);
}

const HEADER_BYTES = 20;

/**
 * Elements of one width (numbers, times, UUIDs). Indexed loops and a DataView: iterating the values and
 * writing through Buffer methods boxed every element, cost three to four times as much a float8 or int8,
 * and made 31 % of the bytes a telemetry replay allocated (docs/performance.md, "Encoders without boxing").
 */
function encodeFixed<T>(
  elementOid: number,
  width: number,
  values: readonly Nullable<T>[],
  write: (view: DataView, offset: number, value: T) => void,
): Buffer {
  const length = values.length;
  let present = 0;
  for (let i = 0; i < length; i++) {
    const value = values[i];
    if (value !== null && value !== undefined) present += 1;
  }
  const bytes = HEADER_BYTES + 4 * length + width * present;
  const buffer = Buffer.allocUnsafe(bytes);
  const view = new DataView(buffer.buffer, buffer.byteOffset, bytes);
  writeHeader(view, elementOid, length, present < length);
  let offset = HEADER_BYTES;
  for (let i = 0; i < length; i++) {
    const value = values[i];
    if (value === null || value === undefined) {
      view.setInt32(offset, -1);
      offset += 4;
      continue;
    }
    view.setInt32(offset, width);
    write(view, offset + 4, value);
    offset += 4 + width;
  }
  return buffer;
}

/** Elements of varying length (text, JSON). `size` must bound the bytes `write` writes; `write` returns them. */
function encodeVarying(
  elementOid: number,
  values: readonly Nullable<string>[],
  size: (value: string) => number,
  write: (buffer: Buffer, offset: number, value: string) => number,
): Buffer {
  const length = values.length;
  let bound = HEADER_BYTES + 4 * length;
  let hasNull = false;
  for (let i = 0; i < length; i++) {
    const value = values[i];
    if (value === null || value === undefined) hasNull = true;
    else bound += size(value);
  }
  const buffer = Buffer.allocUnsafe(bound);
  writeHeader(new DataView(buffer.buffer, buffer.byteOffset, HEADER_BYTES), elementOid, length, hasNull);
  let offset = HEADER_BYTES;
  for (let i = 0; i < length; i++) {
    const value = values[i];
    if (value === null || value === undefined) {
      buffer.writeInt32BE(-1, offset);
      offset += 4;
      continue;
    }
    const written = write(buffer, offset + 4, value);
    buffer.writeInt32BE(written, offset);
    offset += 4 + written;
  }
  return offset === bound ? buffer : buffer.subarray(0, offset);
}

/** A whole number of up to 53 bits as a big-endian int64. */
function writeInt64(view: DataView, offset: number, value: number): void {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not a whole number of 53 bits: ${value}`);
  const high = Math.floor(value / TWO_TO_32);
  view.setInt32(offset, high);
  view.setUint32(offset + 4, value - high * TWO_TO_32);
}

export function int8Array(values: readonly Nullable<number>[]): Buffer {
  return encodeFixed(OID.int8, 8, values, writeInt64);
}

export function int4Array(values: readonly Nullable<number>[]): Buffer {
  return encodeFixed(OID.int4, 4, values, (view, offset, value) => {
    // setInt32 would write NaN as 0 and 1.5 as 1, where PostgreSQL refused their text.
    if (!Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31) {
      throw new RangeError(`not a whole number of 32 bits: ${value}`);
    }
    view.setInt32(offset, value);
  });
}

export function float8Array(values: readonly Nullable<number>[]): Buffer {
  // + 0 turns -0 into 0, as its text form did: a point would otherwise read "-0".
  return encodeFixed(OID.float8, 8, values, (view, offset, value) => view.setFloat64(offset, value + 0));
}

// UTF-8 takes at most 3 bytes per UTF-16 unit (a surrogate pair: 4 for 2). A long string, which Buffer#write
// writes anyway, is measured instead, so its buffer is not three times the size of its text.
const utf8Size = (value: string) =>
  value.length > SHORT_STRING ? Buffer.byteLength(value) : 3 * value.length;

/**
 * A short ASCII string (an id, a key, a unit) is copied by a plain loop: Buffer#write's call into C++
 * costs more than the copy. Anything longer, or not ASCII, is written by Buffer#write.
 */
function writeUtf8(buffer: Buffer, offset: number, value: string): number {
  const length = value.length;
  if (length > SHORT_STRING) return buffer.write(value, offset);
  for (let i = 0; i < length; i++) {
    const code = value.charCodeAt(i);
    if (code > 0x7f) return buffer.write(value, offset);
    buffer[offset + i] = code;
  }
  return length;
}

export function textArray(values: readonly Nullable<string>[]): Buffer {
  return encodeVarying(OID.text, values, utf8Size, writeUtf8);
}

/** JSON texts: json's binary form is the text, which PostgreSQL checks. */
export function jsonArray(values: readonly Nullable<string>[]): Buffer {
  return encodeVarying(OID.json, values, utf8Size, writeUtf8);
}

/** JSON texts (not values): jsonb's binary form is a version byte and the text, which PostgreSQL parses. */
export function jsonbArray(values: readonly Nullable<string>[]): Buffer {
  return encodeVarying(
    OID.jsonb,
    values,
    (value) => 1 + utf8Size(value),
    (buffer, offset, value) => {
      buffer[offset] = 1;
      return 1 + writeUtf8(buffer, offset + 1, value);
    },
  );
}

/** UUIDs in their canonical text form (8-4-4-4-12 hexadecimal digits, either case). */
export function uuidArray(values: readonly Nullable<string>[]): Buffer {
  return encodeFixed(OID.uuid, 16, values, writeUuid);
}

function writeUuid(view: DataView, offset: number, value: string): void {
  if (value.length !== 36) throw new RangeError(`not a UUID: ${value}`);
  let at = 0;
  for (let byte = 0; byte < 16; byte++) {
    if (at === 8 || at === 13 || at === 18 || at === 23) {
      if (value.charCodeAt(at) !== DASH) throw new RangeError(`not a UUID: ${value}`);
      at += 1;
    }
    const high = HEX[value.charCodeAt(at)] ?? -1;
    const low = HEX[value.charCodeAt(at + 1)] ?? -1;
    if (high < 0 || low < 0) throw new RangeError(`not a UUID: ${value}`);
    view.setUint8(offset + byte, (high << 4) | low);
    at += 2;
  }
}

/** ISO 8601 times, to the microsecond as PostgreSQL reads their text (iso-time.ts), or epoch milliseconds. */
export function timestamptzArray(values: readonly Nullable<string | number>[]): Buffer {
  return encodeFixed(OID.timestamptz, 8, values, (view, offset, value) => {
    if (typeof value === 'number') return writeMicroseconds(view, offset, value, 0);
    const { ms, beyondMs } = epochTime(value);
    writeMicroseconds(view, offset, ms, beyondMs);
  });
}

/**
 * PostgreSQL's int64 of microseconds since 2000. A JavaScript number holds them exactly for 285 years
 * either side of 2000 only; a device's clock may claim any year, so times further out go through a BigInt.
 */
function writeMicroseconds(view: DataView, offset: number, ms: number, beyondMs: number): void {
  if (!Number.isInteger(ms)) throw new RangeError(`not a time: ${ms}`);
  const us = (ms - POSTGRES_EPOCH_MS) * 1000 + beyondMs;
  if (Number.isSafeInteger(us)) return writeInt64(view, offset, us);
  // setBigInt64 would wrap silently; PostgreSQL's own range is narrower than int64 anyway.
  const far = BigInt(ms - POSTGRES_EPOCH_MS) * 1000n + BigInt(beyondMs);
  if (far < TIMESTAMP_MIN_US || far >= TIMESTAMP_END_US)
    throw new RangeError(`not a time PostgreSQL holds: ${ms}`);
  view.setBigInt64(offset, far);
}
