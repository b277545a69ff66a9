import type { EventStore, ReadAllOptions, ReadAllPage, RecordedEvent } from './port.js';

/**
 * One read of the global order for several readers of overlapping event types: the state and telemetry
 * projectors (and their partitions) follow the same readings, and each used to read and parse every one
 * of them. Here every read of the store asks for all of `eventTypes`, and each page it returns is kept,
 * under the position it was read after, for the next reader that starts there. A reader's request walks
 * the chain of kept pages from its position and gets them at once, or reads the store where nothing is
 * kept; it gets the events of its own types.
 *
 * A kept page stays a true answer: the store shows only events of transactions older than every running
 * one (docs/eventstore.md), so nothing can later commit inside a range a page covered. A chain that ends on
 * a page that reached the head may end before a read of the reader's own would have: a subscription reads
 * on when an append it was told of lies beyond (subscription.ts), and reading on here at once, tried
 * first, only added a round trip to every batch. Counts go by all of `eventTypes`, so a reader's page
 * holds at most `maxCount` events, and fewer when types it does not follow are among them.
 *
 * Only pages that reached the head are kept (a reader behind it reads on its own, as readers behind
 * rarely stand at the same position); one still being read is joined whatever it returns.
 * A page goes as soon as every reader that joined (`join`) has walked past it, so at the head pages live
 * no longer than the slowest reader takes to come by; at most `maxEvents` events are kept in any case
 * (a page counts at least one, so empty pages that only moved a position are bounded too), the oldest
 * pages first. A reader too far behind the others finds nothing kept and reads on its own, as without
 * sharing.
 */
export interface SharedPages {
  /** Whether a reader of these types may read here: a subset of the shared types. */
  covers(eventTypes: readonly string[] | undefined): boolean;
  /** Counts a reader in until the returned function is called: pages wait for every reader counted. */
  join(): () => void;
  readAll(options: ReadAllOptions): Promise<ReadAllPage>;
  /** Events kept now (pages counted as above), for tests. */
  readonly keptEvents: number;
}

/** Which subscriptions share their reads, and how many events may be kept for them (SharedPages). */
export interface SharedReads {
  readonly eventTypes: readonly string[];
  readonly maxEvents: number;
}

interface KeptPage {
  readonly page: Promise<ReadAllPage>;
  /** Its events, at least one, once read; nothing counts while the read runs. */
  weight: number;
  /** Readers that walked past it (the one whose read it was included). */
  passes: number;
}

/** The key of the start of the order, which no position is (positions are non-empty). */
const START = '';

export function sharedPages(store: Pick<EventStore, 'readAll'>, options: SharedReads): SharedPages {
  const shared = new Set(options.eventTypes);
  const eventTypes = [...shared];
  const kept = new Map<string, KeptPage>();
  let keptEvents = 0;
  let readers = 0;

  const drop = (key: string, entry: KeptPage) => {
    if (kept.get(key) !== entry) return;
    kept.delete(key);
    keptEvents -= entry.weight;
  };
  const passed = (key: string, entry: KeptPage) => {
    entry.passes++;
    if (entry.weight > 0 && readers > 0 && entry.passes >= readers) drop(key, entry);
  };
  const evict = () => {
    for (const [key, entry] of kept) {
      if (keptEvents <= options.maxEvents) return;
      if (entry.weight > 0) drop(key, entry);
    }
  };

  const readFresh = (after: string | undefined, maxCount: number): KeptPage => {
    const key = after ?? START;
    const page = store.readAll({ after, maxCount, eventTypes });
    const entry: KeptPage = { page, weight: 0, passes: 0 };
    kept.set(key, entry);
    page.then(
      (read) => {
        if (kept.get(key) !== entry) return;
        // A page that moved no position would chain to itself. A full one was read by a reader behind the
        // head, where readers rarely meet: keeping them made the projector process busier and ingest
        // slower at 10,000 msg/s (docs/performance.md), so only those that reached the head are kept.
        if (read.lastPosition === undefined || read.lastPosition === after || !read.atEnd) {
          kept.delete(key);
          return;
        }
        entry.weight = Math.max(1, read.events.length);
        keptEvents += entry.weight;
        evict();
      },
      () => drop(key, entry),
    );
    return entry;
  };

  return {
    covers: (types) => types !== undefined && types.length > 0 && types.every((t) => shared.has(t)),

    join() {
      readers++;
      let left = false;
      return () => {
        if (left) return;
        left = true;
        readers--;
      };
    },

    get keptEvents() {
      return keptEvents;
    },

    async readAll(request) {
      if (request.from !== undefined) throw new RangeError('shared pages are read after a position');
      const events: RecordedEvent[] = [];
      let last = request.after;
      let lastPosition: string | undefined;
      let atEnd = false;
      let walked = false;
      for (;;) {
        const room = request.maxCount - events.length;
        if (room <= 0) break;
        const key = last ?? START;
        const found = kept.get(key);
        // The end of the chain: what others read is handed out without a read of the store after it.
        if (!found && walked) break;
        const entry = found ?? readFresh(last, room);
        const page = await entry.page;
        if (page.events.length > room) {
          // Only a page read with a larger count than this request's: cut it at the room left.
          if (events.length === 0) {
            events.push(...page.events.slice(0, room));
            lastPosition = events.at(-1)!.position;
          }
          atEnd = false;
          break;
        }
        for (const event of page.events) events.push(event);
        passed(key, entry);
        walked = true;
        if (page.lastPosition !== undefined) lastPosition = last = page.lastPosition;
        atEnd = page.atEnd;
        if (!found) break;
      }
      const own = request.eventTypes ? new Set(request.eventTypes) : undefined;
      return {
        events: own ? events.filter((e) => own.has(e.type)) : events,
        lastPosition,
        atEnd,
      };
    },
  };
}
