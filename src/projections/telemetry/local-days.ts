import { localDayOf, type LocalDay } from '../../domain/readings/index.js';

const KEPT_PER_ZONE = 16;

/**
 * Remembers recent local days per timezone, so filing thousands of readings into 1d buckets costs a few
 * Intl calls per day and zone rather than several per reading.
 */
export class LocalDays {
  readonly #days = new Map<string, LocalDay[]>();

  of(ms: number, timezone: string): LocalDay {
    let days = this.#days.get(timezone);
    if (!days) {
      days = [];
      this.#days.set(timezone, days);
    }
    const known = days.find((d) => ms >= d.start && ms < d.end);
    if (known) return known;
    const day = safeLocalDay(ms, timezone);
    days.unshift(day);
    if (days.length > KEPT_PER_ZONE) days.pop();
    return day;
  }
}

/**
 * Site zones are checked when a site is created; a zone this runtime's tz database no longer knows must
 * still not stop the projector for ever, so its days fall back to UTC days.
 */
function safeLocalDay(ms: number, timezone: string): LocalDay {
  try {
    return localDayOf(ms, timezone);
  } catch (error) {
    if (error instanceof RangeError) return localDayOf(ms, 'UTC');
    throw error;
  }
}
