/** Lengths of time in milliseconds, one definition for the whole code base. A local day may differ (DST). */
export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;
