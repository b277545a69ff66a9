import { DAY_MS, MINUTE_MS } from '../time.js';

/**
 * Which clock a reading is filed under. A device's own time is what a careful platform wants to chart by
 * (a reading buffered at the edge and delivered late still belongs to when it was measured), but device
 * clocks drift and reset, so it is trusted only within a plausible window around the server time. The
 * rule depends only on the two times in the event, so a replay files every reading in the same bucket.
 */

/** A deviceTime further than this from serverTime (either way) is marked `clock_skew` in the state. */
const CLOCK_SKEW_TOLERANCE_MS = 5 * MINUTE_MS;

/** A deviceTime later than serverTime by more than this cannot be a measurement: filed at server time. */
export const FUTURE_TOLERANCE_MS = CLOCK_SKEW_TOLERANCE_MS;

/** A deviceTime older than serverTime by more than this is not trusted either (AWS SiteWise uses 7 days too). */
export const BACKFILL_LIMIT_MS = 7 * DAY_MS;

/** The time a reading is filed under: its deviceTime when plausible, otherwise the server's receive time. */
export function filedAt(serverTimeMs: number, deviceTimeMs: number | undefined): number {
  if (deviceTimeMs === undefined) return serverTimeMs;
  if (deviceTimeMs > serverTimeMs + FUTURE_TOLERANCE_MS) return serverTimeMs;
  if (deviceTimeMs < serverTimeMs - BACKFILL_LIMIT_MS) return serverTimeMs;
  return deviceTimeMs;
}

/** True when the device's time and the server's disagree by more than the tolerance. */
export function isClockSkewed(serverTimeMs: number, deviceTimeMs: number | undefined): boolean {
  return deviceTimeMs !== undefined && Math.abs(deviceTimeMs - serverTimeMs) > CLOCK_SKEW_TOLERANCE_MS;
}
