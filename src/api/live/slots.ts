/**
 * Concurrent streams per OAuth client in this process. A slot is taken before a stream opens and given
 * back the moment its response closes, whoever closed it.
 */
export class StreamSlots {
  readonly #held = new Map<string, number>();

  constructor(readonly limit: number) {}

  take(clientId: string): boolean {
    const held = this.#held.get(clientId) ?? 0;
    if (held >= this.limit) return false;
    this.#held.set(clientId, held + 1);
    return true;
  }

  release(clientId: string): void {
    const held = (this.#held.get(clientId) ?? 0) - 1;
    if (held > 0) this.#held.set(clientId, held);
    else this.#held.delete(clientId);
  }

  held(clientId: string): number {
    return this.#held.get(clientId) ?? 0;
  }
}
