/**
 * Local days of an IANA zone, from Intl alone: no Date, no I/O. A local day starts at the first instant
 * whose wall clock in the zone reads that date, so a DST day is 23 or 25 hours long and a zone whose
 * clocks jump over midnight starts its day at the jump. Times are milliseconds since the epoch (UTC).
 */

import { DAY_MS, HOUR_MS, MINUTE_MS } from '../time.js';

export interface LocalDay {
  /** First instant of the local day. */
  readonly start: number;
  /** First instant of the next local day. */
  readonly end: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    // Throws RangeError for a zone this runtime does not know: a bug upstream, never a silent UTC.
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timezone, f);
  }
  return f;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function epochDay(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** The wall clock in the zone at `ms`, as if it were a UTC time (whole seconds). */
function wallClock(ms: number, timezone: string): number {
  const parts: Record<string, number> = {};
  for (const part of formatter(timezone).formatToParts(ms)) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const days = epochDay(parts.year!, parts.month!, parts.day!);
  return days * DAY_MS + parts.hour! * HOUR_MS + parts.minute! * MINUTE_MS + parts.second! * 1000;
}

/** UTC offset of the zone at `ms`, in milliseconds (positive east of Greenwich). */
function utcOffset(ms: number, timezone: string): number {
  const whole = ms - (((ms % 1000) + 1000) % 1000);
  return wallClock(whole, timezone) - whole;
}

/** The local day of the zone that contains the instant `ms`. */
export function localDayOf(ms: number, timezone: string): LocalDay {
  const wall = wallClock(ms - (((ms % 1000) + 1000) % 1000), timezone);
  const midnight = wall - (((wall % DAY_MS) + DAY_MS) % DAY_MS);
  const start = startOfWallDay(midnight, timezone);
  const end = startOfWallDay(midnight + DAY_MS, timezone);
  return { start, end };
}

/** Start of the local day that contains `ms`. */
export function startOfLocalDay(ms: number, timezone: string): number {
  return localDayOf(ms, timezone).start;
}

/**
 * The instant the wall clock first reads `midnight` (a wall time at 00:00). Local midnight lies within
 * 14 hours either side of the same wall time read as UTC; the offsets at both ends of that window are the
 * only candidates unless two transitions fall within one day, which no zone does.
 */
function startOfWallDay(midnight: number, timezone: string): number {
  const before = utcOffset(midnight - 15 * HOUR_MS, timezone);
  const after = utcOffset(midnight + 15 * HOUR_MS, timezone);
  const candidates = [midnight - before, midnight - after]
    .filter((u) => wallClock(u, timezone) === midnight)
    .sort((a, b) => a - b);
  // No instant reads 00:00: the clocks jumped over midnight, so the day starts with the jump.
  return candidates[0] ?? midnight - before;
}
