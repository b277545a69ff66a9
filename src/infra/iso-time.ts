/**
 * ISO 8601 times read as PostgreSQL's timestamptz input reads them: where a device's time is recorded
 * (the ingestor), where a projector files a reading by it (projections/repeated-times.ts) and where times
 * go to PostgreSQL in binary (infra/postgres/binary-array.ts), so that no reading of the same text
 * differs. The service records every time in toISOString's form, which is read here digit by digit; any
 * other form goes through Date.parse, which specifies three digits of a second's fraction only (V8 reads
 * `.0123456789` as 123 ms), so the fraction is read apart and rounded to microseconds as PostgreSQL
 * rounds it.
 */

/** A time as epoch milliseconds and the microseconds after them (0-999). */
export interface EpochTime {
  readonly ms: number;
  readonly beyondMs: number;
}

const ZERO = 48;
const NINE = 57;
const Z = 90;
// Per position of `YYYY-MM-DDTHH:MM:SS.sss`: the separator's character code, 0 for a digit.
const ISO_SEPARATORS = [0, 0, 0, 0, 45, 0, 0, 45, 0, 0, 84, 0, 0, 58, 0, 0, 58, 0, 0, 46, 0, 0, 0];
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

const digitAt = (text: string, at: number) => text.charCodeAt(at) - ZERO;
const twoDigits = (text: string, at: number) => 10 * digitAt(text, at) + digitAt(text, at + 1);
const yearAt = (text: string) => 100 * twoDigits(text, 0) + twoDigits(text, 2);
const daysIn = (year: number, month: number) =>
  month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : DAYS_IN_MONTH[month - 1]!;

/** Epoch milliseconds of a time in toISOString's form, or undefined for any other text. */
function canonicalEpochMs(iso: string): number | undefined {
  if (iso.length !== 24 || iso.charCodeAt(23) !== Z) return undefined;
  for (let i = 0; i < 23; i++) {
    const code = iso.charCodeAt(i);
    const separator = ISO_SEPARATORS[i];
    if (separator === 0 ? code < ZERO || code > NINE : code !== separator) return undefined;
  }
  const year = yearAt(iso);
  const month = twoDigits(iso, 5);
  const day = twoDigits(iso, 8);
  const hour = twoDigits(iso, 11);
  const minute = twoDigits(iso, 14);
  const second = twoDigits(iso, 17);
  // Out of range (24:00, 30 February) is left to the general reading, which knows each case.
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const ms = 10 * twoDigits(iso, 20) + digitAt(iso, 22);
  return ((daysSinceEpoch(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + ms;
}

/**
 * Any ISO 8601 time z.iso.datetime() lets through. A day its month lacks, which Date.parse would roll over
 * into the next month, is refused as PostgreSQL refuses it. Year 0, which PostgreSQL's text input refuses,
 * is ISO 8601's 1 BC, as in toISOString: taken, so that no device's clock can stop a projector.
 */
export function epochTime(iso: string): EpochTime {
  const canonical = canonicalEpochMs(iso);
  if (canonical !== undefined) return { ms: canonical, beyondMs: 0 };
  const dot = iso.indexOf('.');
  let end = dot + 1;
  while (dot >= 0 && end < iso.length && iso.charCodeAt(end) >= ZERO && iso.charCodeAt(end) <= NINE) end += 1;
  const wholeSeconds = Date.parse(dot < 0 ? iso : iso.slice(0, dot) + iso.slice(end));
  if (Number.isNaN(wholeSeconds) || !calendarDate(iso)) throw new RangeError(`not a time: ${iso}`);
  if (dot < 0 || end === dot + 1) return { ms: wholeSeconds, beyondMs: 0 };
  // PostgreSQL: rint(strtod(fraction) * 1000000), halves to even; the same double operations here.
  const us = roundHalfToEven(Number(iso.slice(dot, end)) * 1e6);
  return { ms: wholeSeconds + Math.floor(us / 1000), beyondMs: us % 1000 };
}

function roundHalfToEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Whether a time that starts with a date (YYYY-MM-DD) names a day its month has. */
function calendarDate(iso: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}/.test(iso)) return true;
  return twoDigits(iso, 8) <= daysIn(yearAt(iso), twoDigits(iso, 5));
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

const DAY_MS = 86_400_000;
let cachedDayStart = Number.NaN;
let cachedDayPrefix = '';

const pad2 = (n: number) => (n < 10 ? '0' : '') + n;
const pad3 = (n: number) => (n < 10 ? '00' : n < 100 ? '0' : '') + n;

/**
 * Epoch milliseconds in toISOString's form. The audit chain writes one recording time per event it
 * chains or verifies, nearly all on the day of the one before: that day's `YYYY-MM-DDT` is kept from the
 * previous call and the time of day written digit by digit, a fifth of toISOString's cost. Days outside
 * years 0000-9999 (and invalid times, which throw) go through toISOString itself.
 */
export function isoInstant(ms: number): string {
  let inDay = ms - cachedDayStart;
  if (!(inDay >= 0 && inDay < DAY_MS)) {
    const dayStart = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
    const iso = new Date(dayStart).toISOString();
    if (iso.length !== 24) return new Date(ms).toISOString();
    cachedDayStart = dayStart;
    cachedDayPrefix = iso.slice(0, 11);
    inDay = ms - dayStart;
  }
  const hours = Math.floor(inDay / 3_600_000);
  const minutes = Math.floor(inDay / 60_000) % 60;
  const seconds = Math.floor(inDay / 1000) % 60;
  return `${cachedDayPrefix}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${pad3(inDay % 1000)}Z`;
}
