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
// Strings up to this length are copied by a loop while they are ASCII (writeUtf8).
const SHORT_STRING = 64;
const DASH = 45;
// The value of each hexadecimal digit by its character code, -1 for any other character.
const HEX = Int8Array.from({ length: 128 }, (_, code) => {
  const digit = parseInt(String.fromCharCode(code), 16);
  return Number.isNaN(digit) ? -1 : digit;
});

type Nullable<T> = T | null | undefined;

/** `size` must bound the bytes `write` writes for a value; `write` returns them. */
function encode<T>(
  elementOid: number,
  values: readonly Nullable<T>[],
  size: (value: T) => number,
  write: (buffer: Buffer, offset: number, value: T) => number,
): Buffer {
  let bound = 20;
  let nulls = 0;
  for (const value of values) {
    if (value === null || value === undefined) nulls = 1;
    else bound += size(value);
    bound += 4;
  }
  const buffer = Buffer.allocUnsafe(bound);
  buffer.writeInt32BE(1, 0); // dimensions
  buffer.writeInt32BE(nulls, 4);
  buffer.writeInt32BE(elementOid, 8);
  buffer.writeInt32BE(values.length, 12);
  buffer.writeInt32BE(1, 16); // lower bound
  let offset = 20;
  for (const value of values) {
    if (value === null || value === undefined) {
      buffer.writeInt32BE(-1, offset);
      offset += 4;
      continue;
    }
    const length = write(buffer, offset + 4, value);
    buffer.writeInt32BE(length, offset);
    offset += 4 + length;
  }
  return offset === bound ? buffer : buffer.subarray(0, offset);
}

/** A whole number of up to 53 bits as a big-endian int64. */
function writeInt64(buffer: Buffer, offset: number, value: number): number {
  if (!Number.isSafeInteger(value)) throw new RangeError(`not a whole number of 53 bits: ${value}`);
  const high = Math.floor(value / TWO_TO_32);
  buffer.writeInt32BE(high, offset);
  buffer.writeUInt32BE(value - high * TWO_TO_32, offset + 4);
  return 8;
}

const eight = () => 8;

export function int8Array(values: readonly Nullable<number>[]): Buffer {
  return encode(OID.int8, values, eight, writeInt64);
}

export function int4Array(values: readonly Nullable<number>[]): Buffer {
  return encode(
    OID.int4,
    values,
    () => 4,
    (buffer, offset, value) => {
      // writeInt32BE would write NaN as 0 and 1.5 as 1, where PostgreSQL refused their text.
      if (!Number.isInteger(value)) throw new RangeError(`not a whole number: ${value}`);
      return buffer.writeInt32BE(value, offset) - offset;
    },
  );
}

export function float8Array(values: readonly Nullable<number>[]): Buffer {
  // + 0 turns -0 into 0, as its text form did: a point would otherwise read "-0".
  return encode(
    OID.float8,
    values,
    eight,
    (buffer, offset, value) => buffer.writeDoubleBE(value + 0, offset) - offset,
  );
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
  return encode(OID.text, values, utf8Size, writeUtf8);
}

/** JSON texts: json's binary form is the text, which PostgreSQL checks. */
export function jsonArray(values: readonly Nullable<string>[]): Buffer {
  return encode(OID.json, values, utf8Size, writeUtf8);
}

/** JSON texts (not values): jsonb's binary form is a version byte and the text, which PostgreSQL parses. */
export function jsonbArray(values: readonly Nullable<string>[]): Buffer {
  return encode(
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
  return encode(OID.uuid, values, () => 16, writeUuid);
}

function writeUuid(buffer: Buffer, offset: number, value: string): number {
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
    buffer[offset + byte] = (high << 4) | low;
    at += 2;
  }
  return 16;
}

/** ISO 8601 times, to the microsecond as PostgreSQL reads their text (iso-time.ts), or epoch milliseconds. */
export function timestamptzArray(values: readonly Nullable<string | number>[]): Buffer {
  return encode(OID.timestamptz, values, eight, (buffer, offset, value) => {
    if (typeof value === 'number') return writeMicroseconds(buffer, offset, value, 0);
    const { ms, beyondMs } = epochTime(value);
    return writeMicroseconds(buffer, offset, ms, beyondMs);
  });
}

/**
 * PostgreSQL's int64 of microseconds since 2000. A JavaScript number holds them exactly for 285 years
 * either side of 2000 only; a device's clock may claim any year, so times further out go through a BigInt.
 */
function writeMicroseconds(buffer: Buffer, offset: number, ms: number, beyondMs: number): number {
  if (!Number.isInteger(ms)) throw new RangeError(`not a time: ${ms}`);
  const us = (ms - POSTGRES_EPOCH_MS) * 1000 + beyondMs;
  if (Number.isSafeInteger(us)) return writeInt64(buffer, offset, us);
  buffer.writeBigInt64BE(BigInt(ms - POSTGRES_EPOCH_MS) * 1000n + BigInt(beyondMs), offset);
  return 8;
}
