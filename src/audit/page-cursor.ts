/**
 * Items read a page at a time, the next page read while the caller works through the current one (two
 * readers merged by position keep the database and this process busy together). `read` gives the next page,
 * or undefined when there is none. Within a page the cursor is synchronous: `current()` awaits only when a
 * page is used up.
 */
export class PageCursor<T> {
  private items: readonly T[] = [];
  private index = 0;
  private ended = false;
  private next: Promise<readonly T[] | undefined>;

  constructor(private readonly read: () => Promise<readonly T[] | undefined>) {
    this.next = this.readAhead();
  }

  /** The current item without waiting, or undefined when the page is used up (then call `current`). */
  peek(): T | undefined {
    return this.items[this.index];
  }

  /** The current item, reading on when the page is used up; undefined at the end. */
  async current(): Promise<T | undefined> {
    while (this.index >= this.items.length) {
      if (this.ended) return undefined;
      const page = await this.next;
      if (page === undefined) {
        this.ended = true;
        return undefined;
      }
      this.items = page;
      this.index = 0;
      this.next = this.readAhead();
    }
    return this.items[this.index];
  }

  advance(): void {
    this.index++;
  }

  private readAhead(): Promise<readonly T[] | undefined> {
    const page = this.read();
    // A page read ahead and never used (the caller stopped first) must not surface as an unhandled rejection.
    page.catch(() => undefined);
    return page;
  }
}
