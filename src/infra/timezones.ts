import type { TimezoneDirectory } from '../domain/sites/index.js';

/**
 * The IANA zones this runtime's tz database knows. Intl.supportedValuesOf lists only ICU's canonical
 * names (it lacks "UTC" and "Asia/Kolkata" on Node 20), so the test is whether Intl accepts the zone; a
 * name Intl only accepts after fixing its case ("europe/paris") is refused, so stored names stay canonical.
 */
export const ianaTimezones: TimezoneDirectory = {
  has(timezone) {
    if (timezone.length === 0 || timezone.length > 64 || !/^[A-Za-z0-9_+\-/]+$/.test(timezone)) return false;
    let resolved: string;
    try {
      resolved = new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone;
    } catch {
      return false;
    }
    return resolved === timezone || resolved.toLowerCase() !== timezone.toLowerCase();
  },
};
