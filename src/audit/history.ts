import type { Actor } from '../domain/events/actor.js';
import type { EventStore, RecordedEvent } from '../eventstore/port.js';

/** What every audit question can be narrowed by. Times are ISO 8601 instants. */
export interface AuditFilter {
  readonly projectId?: string;
  readonly deviceId?: string;
  /** Inclusive. */
  readonly from?: string;
  /** Exclusive. */
  readonly to?: string;
}

const PAGE = 5000;

/**
 * Every event of these types, in the store's global order, straight from the event store (never a read
 * model: the answer is the same before and after a projection rebuild).
 */
export async function* readHistory(
  store: EventStore,
  eventTypes: readonly string[],
): AsyncGenerator<RecordedEvent> {
  let after: string | undefined;
  for (;;) {
    const page = await store.readAll({ after, maxCount: PAGE, eventTypes });
    for (const event of page.events) yield event;
    if (page.lastPosition !== undefined) after = page.lastPosition;
    if (page.atEnd || page.events.length === 0) return;
  }
}

/**
 * When a fact happened: the time the decision recorded in the event (the server's clock at the decision),
 * or the store's recording time for facts that carry none (an adoption's default denial).
 */
export function occurredAt(event: RecordedEvent): string {
  const data = event.data as Record<string, unknown>;
  for (const key of ['at', 'acceptedAt', 'sentAt', 'issuedAt']) {
    const value = data[key];
    if (typeof value === 'string') return new Date(value).toISOString();
  }
  return event.recordedAt.toISOString();
}

/** Project, device and window in one test, so that every audit question narrows its facts alike. */
export function withinFilter(
  data: { readonly projectId?: string; readonly deviceId?: string },
  at: string,
  filter: AuditFilter,
): boolean {
  return (
    (filter.projectId === undefined || data.projectId === filter.projectId) &&
    (filter.deviceId === undefined || data.deviceId === filter.deviceId) &&
    (filter.from === undefined || at >= filter.from) &&
    (filter.to === undefined || at < filter.to)
  );
}

/** An actor as one word for a table: `client:<id>`, `operator`, `system`, or the agent that reported. */
export function describeActor(actor: Actor | undefined, fallback = 'system'): string {
  if (!actor) return fallback;
  return actor.kind === 'client' ? `client:${actor.clientId}` : actor.kind;
}
