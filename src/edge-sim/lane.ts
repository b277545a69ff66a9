/**
 * One lane of the outbox: first in, first out, and a failed message back at the front. A JavaScript array
 * would do the same, but its shift() copies every element behind the first once the array is large
 * (V8 moves the start of a small array in place, not of one in its large-object space): at 20,000 queued
 * messages a shift cost about 40 µs here, at 150,000 about 110 µs. An agent with a backlog then spent its
 * CPU moving the backlog, and on a machine shared with the cloud (the ingest bench) slowed the very service
 * it was waiting for. A ring buffer costs the same at either end however long the lane is.
 */
export class Lane<T> {
  // Power-of-two capacity, so an index wraps with a mask.
  #items: (T | undefined)[] = new Array<T | undefined>(16);
  #head = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  push(item: T): void {
    if (this.#length === this.#items.length) this.#grow();
    this.#items[(this.#head + this.#length) & (this.#items.length - 1)] = item;
    this.#length += 1;
  }

  /** Puts an item back at the front: it is the next one shift() returns. */
  unshift(item: T): void {
    if (this.#length === this.#items.length) this.#grow();
    this.#head = (this.#head - 1) & (this.#items.length - 1);
    this.#items[this.#head] = item;
    this.#length += 1;
  }

  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    // Not kept alive by the buffer once it has left the lane.
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) & (this.#items.length - 1);
    this.#length -= 1;
    return item;
  }

  #grow(): void {
    const mask = this.#items.length - 1;
    const bigger = new Array<T | undefined>(this.#items.length * 2);
    for (let i = 0; i < this.#length; i++) bigger[i] = this.#items[(this.#head + i) & mask];
    this.#items = bigger;
    this.#head = 0;
  }
}
