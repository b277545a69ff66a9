/**
 * Epoch milliseconds of ISO times that mostly come in runs of the same text, as the readings of one message
 * share its device time: each run is parsed once. Date.parse was a measurable part of a projector's time.
 */
export class RepeatedTimes {
  #last: string | undefined;
  #lastMs = 0;

  /** Undefined stays undefined: a reading without a device time is filed at its server time. */
  ms(time: string | undefined): number | undefined {
    if (time === undefined) return undefined;
    if (time !== this.#last) {
      this.#last = time;
      this.#lastMs = Date.parse(time);
    }
    return this.#lastMs;
  }
}
