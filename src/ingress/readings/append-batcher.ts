interface Waiting<T, R> {
  readonly item: T;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: calls that arrive close together share one write. A batch is written when `windowMs` has
 * passed since its first item, when it holds `maxItems`, or as soon as a write slot frees up while items
 * wait (they have waited long enough). Each caller is settled only by its own batch's write: resolved
 * with its result once the write succeeded, rejected with the write's error otherwise.
 */
export class AppendBatcher<T, R> {
  readonly #write: (items: readonly T[]) => Promise<readonly R[]>;
  readonly #windowMs: number;
  readonly #maxItems: number;
  readonly #maxInFlight: number;
  #pending: Waiting<T, R>[] = [];
  #timer: NodeJS.Timeout | undefined;
  #inFlight = new Set<Promise<void>>();

  constructor(options: {
    write: (items: readonly T[]) => Promise<readonly R[]>;
    windowMs: number;
    maxItems: number;
    maxInFlight?: number;
  }) {
    this.#write = options.write;
    this.#windowMs = options.windowMs;
    this.#maxItems = options.maxItems;
    this.#maxInFlight = options.maxInFlight ?? 4;
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (this.#pending.length >= this.#maxItems) this.#flush();
      else this.#timer ??= setTimeout(() => this.#flush(), this.#windowMs);
    });
  }

  /** Writes everything still waiting and resolves once every write has settled. */
  async drain(): Promise<void> {
    while (this.#pending.length > 0 || this.#inFlight.size > 0) {
      this.#flush();
      await Promise.allSettled([...this.#inFlight]);
    }
  }

  #flush() {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#pending.length > 0 && this.#inFlight.size < this.#maxInFlight) {
      const batch = this.#pending.splice(0, this.#maxItems);
      const running = this.#run(batch).finally(() => {
        this.#inFlight.delete(running);
        // Items that queued behind full write slots go out now rather than after another window.
        if (this.#pending.length > 0) this.#flush();
      });
      this.#inFlight.add(running);
    }
  }

  async #run(batch: readonly Waiting<T, R>[]) {
    try {
      const results = await this.#write(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(results[i]!));
    } catch (error) {
      for (const b of batch) b.reject(error);
    }
  }
}
