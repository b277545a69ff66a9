/**
 * One-dimensional arrays in PostgreSQL's binary form, for the batch statements' largest parameters. pg sends
 * a Buffer parameter as binary, and PostgreSQL then reads each element by its type's receive function,
 * where the text form (array-literal.ts) had it scan the array's text character by character and parse
 * every number and time from its digits: 18 % of the telemetry projector's PostgreSQL time in a replay
 * (docs/performance.md, "Array parameters in binary").
 *
 * The statement must cast the parameter to the array type written here (`$1::float8[]` for float8Array):
 * PostgreSQL refuses an array whose element type is not the one it expects. null and undefined are NULL.
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

// Microseconds from the Unix epoch to PostgreSQL's, 2000-01-01 UTC.
const POSTGRES_EPOCH_US = 946_684_800_000_000;
const TWO_TO_32 = 2 ** 32;

type Nullable<T> = T | null | undefined;

/** Writes the header and each element (`size` bytes at most, `write` returns the bytes it wrote). */
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
    (buffer, offset, value) => buffer.writeInt32BE(value, offset) - offset,
  );
}

export function float8Array(values: readonly Nullable<number>[]): Buffer {
  return encode(
    OID.float8,
    values,
    eight,
    (buffer, offset, value) => buffer.writeDoubleBE(value, offset) - offset,
  );
}

const utf8Size = (value: string) => 3 * value.length;
const writeUtf8 = (buffer: Buffer, offset: number, value: string) => buffer.write(value, offset);

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
    (value) => 1 + 3 * value.length,
    (buffer, offset, value) => {
      buffer[offset] = 1;
      return 1 + buffer.write(value, offset + 1);
    },
  );
}

/** UUIDs in their canonical text form (8-4-4-4-12 hexadecimal digits). */
export function uuidArray(values: readonly Nullable<string>[]): Buffer {
  return encode(
    OID.uuid,
    values,
    () => 16,
    (buffer, offset, value) => {
      if (value.length !== 36 || !UUID.test(value)) throw new RangeError(`not a UUID: ${value}`);
      buffer.write(value.slice(0, 8), offset, 'hex');
      buffer.write(value.slice(9, 13), offset + 4, 'hex');
      buffer.write(value.slice(14, 18), offset + 6, 'hex');
      buffer.write(value.slice(19, 23), offset + 8, 'hex');
      buffer.write(value.slice(24), offset + 10, 'hex');
      return 16;
    },
  );
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** ISO 8601 times, kept to the microsecond as PostgreSQL keeps them, or epoch milliseconds. */
export function timestamptzArray(values: readonly Nullable<string | number>[]): Buffer {
  return encode(OID.timestamptz, values, eight, (buffer, offset, value) => {
    const us = typeof value === 'number' ? value * 1000 : epochMicroseconds(value);
    return writeInt64(buffer, offset, us - POSTGRES_EPOCH_US);
  });
}

/**
 * Microseconds since the Unix epoch of an ISO 8601 time, as PostgreSQL reads it. Date.parse keeps the
 * fraction's first three digits; the whole fraction is then rounded to microseconds as PostgreSQL rounds it
 * (rint of the fraction times a million: halves to even).
 */
export function epochMicroseconds(iso: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`not a time: ${iso}`);
  const dot = iso.indexOf('.');
  if (dot < 0) return ms * 1000;
  let end = dot + 1;
  while (end < iso.length && iso.charCodeAt(end) >= 48 && iso.charCodeAt(end) <= 57) end += 1;
  if (end - dot - 1 <= 3) return ms * 1000;
  const wholeSecondMs = ms - Number(iso.slice(dot + 1, dot + 4));
  return wholeSecondMs * 1000 + roundHalfToEven(Number(iso.slice(dot, end)) * 1e6);
}

function roundHalfToEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
