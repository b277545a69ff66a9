import { epochTime } from '../infra/iso-time.js';

/**
 * Epoch milliseconds of ISO times that mostly come in runs of the same text, as the readings of one message
 * share its device time: each run is parsed once, as PostgreSQL reads the text (iso-time.ts, where
 * Date.parse misreads some long fractions). Parsing was a measurable part of a projector's time.
 */
export class RepeatedTimes {
  #last: string | undefined;
  #lastMs = 0;

  /**
   * Undefined stays undefined: a reading without a device time is filed at its server time. Text that is
   * no time at all (the event schemas let none through) is NaN, as Date.parse has it.
   */
  ms(time: string | undefined): number | undefined {
    if (time === undefined) return undefined;
    if (time !== this.#last) {
      this.#last = time;
      this.#lastMs = epochMsOrNaN(time);
    }
    return this.#lastMs;
  }
}

function epochMsOrNaN(time: string): number {
  try {
    return epochTime(time).ms;
  } catch {
    return Number.NaN;
  }
}
