/** One open stream's place among its client's streams; given back once, when the stream closes. */
export interface StreamSlot {
  release(): void;
}

/** Concurrent streams per OAuth client, counted in this process or across the API processes. */
export interface StreamSlotPool {
  readonly limit: number;
  /** A slot for one more stream of `clientId`, or undefined when it already holds `limit`. */
  take(clientId: string): Promise<StreamSlot | undefined>;
}

/**
 * Concurrent streams per OAuth client in this process. A slot is taken before a stream opens and given
 * back the moment its response closes, whoever closed it.
 */
export class StreamSlots implements StreamSlotPool {
  readonly #held = new Map<string, number>();

  constructor(readonly limit: number) {}

  async take(clientId: string): Promise<StreamSlot | undefined> {
    return this.takeNow(clientId);
  }

  takeNow(clientId: string): StreamSlot | undefined {
    const held = this.#held.get(clientId) ?? 0;
    if (held >= this.limit) return undefined;
    this.#held.set(clientId, held + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.#held.get(clientId) ?? 0) - 1;
        if (left > 0) this.#held.set(clientId, left);
        else this.#held.delete(clientId);
      },
    };
  }

  held(clientId: string): number {
    return this.#held.get(clientId) ?? 0;
  }
}
