// setTimeout cannot wait longer than this (about 24.8 days); a sweep arms the timer again later.
const MAX_TIMER_MS = 2 ** 31 - 1;
// Fire just after the deadline, so a decision taken at >= deadline never sees it a millisecond early.
const AFTER_DEADLINE_MS = 5;

/**
 * Timers for deadlines a sweep has found still ahead, one per key, so a deadline is met on time rather than
 * at the next sweep. The timers belong to one leadership term: they are all dropped when it ends.
 */
export class DeadlineTimers {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #terms = new WeakSet<AbortSignal>();

  /** Calls `due` after `waitMs` (plus a hair), unless a timer for `key` is armed already or the term ended. */
  arm(leadership: AbortSignal, key: string, waitMs: number, due: () => void): void {
    this.#follow(leadership);
    if (this.#timers.has(key) || leadership.aborted) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(key);
        due();
      },
      Math.min(waitMs + AFTER_DEADLINE_MS, MAX_TIMER_MS),
    );
    timer.unref();
    this.#timers.set(key, timer);
  }

  #follow(leadership: AbortSignal): void {
    if (this.#terms.has(leadership)) return;
    this.#terms.add(leadership);
    leadership.addEventListener('abort', () => {
      for (const timer of this.#timers.values()) clearTimeout(timer);
      this.#timers.clear();
    });
  }
}
