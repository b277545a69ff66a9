/**
 * At most one log line per key per window, so one noisy source (an agent, a failing dependency) cannot
 * flood the log; each line can say how many it stands for.
 */
export class LogThrottle {
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #maxKeys: number;
  readonly #last = new Map<string, { at: number; held: number }>();

  constructor(options: { windowMs: number; now?: () => number; maxKeys?: number }) {
    this.#windowMs = options.windowMs;
    this.#now = options.now ?? Date.now;
    this.#maxKeys = options.maxKeys ?? 10_000;
  }

  /** When a line for `key` is due now: how many were held back since its last one. Otherwise undefined. */
  due(key: string): number | undefined {
    const now = this.#now();
    const last = this.#last.get(key);
    if (last && now - last.at < this.#windowMs) {
      last.held += 1;
      return undefined;
    }
    this.#prune(now);
    this.#last.set(key, { at: now, held: 0 });
    return last?.held ?? 0;
  }

  #prune(now: number): void {
    if (this.#last.size < this.#maxKeys) return;
    for (const [key, entry] of this.#last) {
      if (now - entry.at >= this.#windowMs) this.#last.delete(key);
    }
  }
}
