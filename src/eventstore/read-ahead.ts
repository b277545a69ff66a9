import type { EventStore, ReadAllOptions, ReadAllPage, RecordedEvent } from './port.js';

/**
 * Pages of the global order, one read ahead: while the caller applies a page that did not reach the end,
 * the next one is already being read, so the store's work and the caller's overlap on two cores. A page
 * read ahead is used only when the caller asks for the position it was read from; otherwise it is dropped
 * (and a failure of it is reported only to a caller that uses it). `onStoreRead` runs as each read of the
 * store begins. `prepare` runs on a page read ahead as soon as it arrives, so the caller's own work on it
 * (parsing, folding) also overlaps the page before; its result comes with the page as `prepared`.
 */
interface ReadAheadPage extends ReadAllPage {
  readonly prepared?: unknown;
}

export interface PageReader {
  /** The page after `after`: the one read ahead from there, or a fresh read. */
  read(after: string | undefined): Promise<ReadAheadPage>;
  /** Starts reading the page after `after` now, for a later `read(after)`. */
  readAhead(after: string | undefined): void;
}

export function pageReader(
  store: Pick<EventStore, 'readAll'>,
  options: Omit<ReadAllOptions, 'after' | 'from'>,
  hooks: {
    readonly onStoreRead?: () => void;
    readonly prepare?: (events: readonly RecordedEvent[]) => unknown;
  } = {},
): PageReader {
  const { onStoreRead, prepare } = hooks;
  let ahead: { after: string | undefined; page: Promise<ReadAheadPage> } | undefined;
  const readFrom = (after: string | undefined) => {
    onStoreRead?.();
    return store.readAll({ ...options, after });
  };
  return {
    read(after) {
      const kept = ahead;
      ahead = undefined;
      return kept && kept.after === after ? kept.page : readFrom(after);
    },
    readAhead(after) {
      const read = readFrom(after);
      const page: Promise<ReadAheadPage> = prepare ? read.then((p) => withPrepared(p, prepare)) : read;
      // Dropped pages must not surface as unhandled rejections; a caller that uses the page still sees it.
      page.catch(() => undefined);
      ahead = { after, page };
    },
  };
}

/**
 * The page with what `prepare` made of it. A page it fails on goes without: its consumer then does the same
 * work in apply, where a real fault in it surfaces and is reported as any failed batch is.
 */
function withPrepared(
  page: ReadAllPage,
  prepare: (events: readonly RecordedEvent[]) => unknown,
): ReadAheadPage {
  if (page.events.length === 0) return page;
  try {
    return { ...page, prepared: prepare(page.events) };
  } catch {
    return page;
  }
}
