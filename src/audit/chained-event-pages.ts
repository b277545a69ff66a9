import { CHAINED_EVENT_TYPES } from '../domain/audit/chained-events.js';
import type { EventStore, ReadAllOptions, RecordedEvent } from '../eventstore/port.js';

const PAGE = 10_000;

/**
 * The chained events of the global order from `start` on, with each event's data as the store keeps it
 * (what the chain commits to): a page at each call, undefined once the visible end was read.
 */
export function chainedEventPages(
  store: EventStore,
  start: Pick<ReadAllOptions, 'from' | 'after'>,
): () => Promise<readonly RecordedEvent[] | undefined> {
  let bound = start;
  let done = false;
  return async () => {
    if (done) return undefined;
    const page = await store.readAll({
      ...bound,
      maxCount: PAGE,
      eventTypes: CHAINED_EVENT_TYPES,
      dataAsStored: true,
      longRead: true,
    });
    done = page.atEnd || page.events.length === 0;
    if (page.lastPosition !== undefined) bound = { after: page.lastPosition };
    return page.events.length > 0 || !done ? page.events : undefined;
  };
}
