import type { RecordedEvent } from '../eventstore/port.js';

/**
 * What a projector's `prepare` did for a batch ahead of applying it (Projector.prepare), good only for
 * exactly the events it was done for: the same events, in the same order. Anything else (a batch of which
 * some events were applied meanwhile, a partition's share of it) gets nothing, and apply does the work.
 */
export class PreparedWork<T> {
  constructor(
    private readonly events: readonly RecordedEvent[],
    private readonly work: T,
  ) {}

  /** The work, when `prepared` is work of this kind done for exactly `events`. */
  static for<T>(prepared: unknown, events: readonly RecordedEvent[]): T | undefined {
    if (!(prepared instanceof PreparedWork)) return undefined;
    const done = prepared.events;
    const same = done.length === events.length && events.every((e, i) => e === done[i]);
    return same ? (prepared.work as T) : undefined;
  }
}
