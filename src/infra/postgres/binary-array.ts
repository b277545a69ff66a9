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

// Milliseconds from the Unix epoch to PostgreSQL's, 2000-01-01 UTC.
const POSTGRES_EPOCH_MS = 946_684_800_000;
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

const SHORT_STRING = 64;

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

/** UUIDs in their canonical text form (8-4-4-4-12 hexadecimal digits, either case). */
export function uuidArray(values: readonly Nullable<string>[]): Buffer {
  return encode(OID.uuid, values, () => 16, writeUuid);
}

function writeUuid(buffer: Buffer, offset: number, value: string): number {
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
  if (value.length !== 36) throw new RangeError(`not a UUID: ${value}`);
  return 16;
}

const DASH = 45;
// The value of each hexadecimal digit by its character code, -1 for any other character.
const HEX = Int8Array.from({ length: 128 }, (_, code) => {
  const digit = parseInt(String.fromCharCode(code), 16);
  return Number.isNaN(digit) ? -1 : digit;
});

/** ISO 8601 times, kept to the microsecond as PostgreSQL keeps them, or epoch milliseconds. */
export function timestamptzArray(values: readonly Nullable<string | number>[]): Buffer {
  return encode(OID.timestamptz, values, eight, (buffer, offset, value) => {
    if (typeof value === 'number') return writeMicroseconds(buffer, offset, value, 0);
    const canonical = canonicalMs(value);
    if (canonical !== undefined) return writeMicroseconds(buffer, offset, canonical, 0);
    const ms = Date.parse(value);
    // Date.parse rolls 30 February over into March, where PostgreSQL refuses the date.
    if (Number.isNaN(ms) || !calendarDate(value)) throw new RangeError(`not a time: ${value}`);
    const [wholeMs, beyond] = fractionBeyondMs(value, ms);
    return writeMicroseconds(buffer, offset, wholeMs, beyond);
  });
}

/**
 * Epoch milliseconds and microseconds beyond them, as PostgreSQL's int64 of microseconds since 2000. A
 * JavaScript number holds microseconds exactly for 285 years either side of 2000 only; a device's clock
 * may claim any year, so times further out go through a BigInt.
 */
function writeMicroseconds(buffer: Buffer, offset: number, ms: number, beyondMs: number): number {
  if (!Number.isInteger(ms)) throw new RangeError(`not a time: ${ms}`);
  const us = (ms - POSTGRES_EPOCH_MS) * 1000 + beyondMs;
  if (Number.isSafeInteger(us)) return writeInt64(buffer, offset, us);
  buffer.writeBigInt64BE(BigInt(ms - POSTGRES_EPOCH_MS) * 1000n + BigInt(beyondMs), offset);
  return 8;
}

/**
 * Date.parse keeps the first three digits of a time's fraction of a second. When it has more, the whole
 * fraction is rounded to microseconds as PostgreSQL rounds it (rint of the fraction times a million:
 * halves to even), and returned as the milliseconds of the whole second and the microseconds after them.
 */
function fractionBeyondMs(iso: string, ms: number): [number, number] {
  const dot = iso.indexOf('.');
  if (dot < 0) return [ms, 0];
  let end = dot + 1;
  while (end < iso.length && iso.charCodeAt(end) >= 48 && iso.charCodeAt(end) <= 57) end += 1;
  if (end - dot - 1 <= 3) return [ms, 0];
  const wholeSecondMs = ms - Number(iso.slice(dot + 1, dot + 4));
  return [wholeSecondMs, roundHalfToEven(Number(iso.slice(dot, end)) * 1e6)];
}

function roundHalfToEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Milliseconds of a time in the form toISOString writes (`2026-11-28T12:34:56.789Z`), which is how the
 * service records every time: read digit by digit, several times faster than Date.parse. Undefined for any
 * other form, or for a field out of its range, which Date.parse then reads or refuses.
 */
function canonicalMs(iso: string): number | undefined {
  if (iso.length !== 24 || iso.charCodeAt(23) !== 90 /* Z */) return undefined;
  for (let i = 0; i < 23; i++) {
    const code = iso.charCodeAt(i);
    const expected = ISO_SEPARATORS[i];
    if (expected === 0 ? code < 48 || code > 57 : code !== expected) return undefined;
  }
  const year = 1000 * digitAt(iso, 0) + 100 * digitAt(iso, 1) + twoDigits(iso, 2);
  const month = twoDigits(iso, 5);
  const day = twoDigits(iso, 8);
  const hour = twoDigits(iso, 11);
  const minute = twoDigits(iso, 14);
  const second = twoDigits(iso, 17);
  const ms = 10 * twoDigits(iso, 20) + digitAt(iso, 22);
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  return ((daysSinceEpoch(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + ms;
}

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar, counted in 400-year eras. */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** Whether a time that starts with a date (YYYY-MM-DD) names a day its month has. */
function calendarDate(iso: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}/.test(iso)) return true;
  const day = twoDigits(iso, 8);
  return day <= daysIn(1000 * digitAt(iso, 0) + 100 * digitAt(iso, 1) + twoDigits(iso, 2), twoDigits(iso, 5));
}

const digitAt = (text: string, at: number) => text.charCodeAt(at) - 48;
const twoDigits = (text: string, at: number) => 10 * digitAt(text, at) + digitAt(text, at + 1);
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysIn = (year: number, month: number) =>
  month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : DAYS_IN_MONTH[month - 1]!;

// Per position of `YYYY-MM-DDTHH:MM:SS.sss`: the separator's character code, 0 for a digit.
const ISO_SEPARATORS = [0, 0, 0, 0, 45, 0, 0, 45, 0, 0, 84, 0, 0, 58, 0, 0, 58, 0, 0, 46, 0, 0, 0];
