import { randomUUID } from 'node:crypto';
import type { Decider } from '../domain/decider.js';
import { WrongExpectedRevisionError, type AppendResult, type EventStore, type NewEvent } from './port.js';

export interface TypedEvent {
  readonly type: string;
  readonly data: unknown;
}

export interface HandleResult<Event, State> {
  readonly events: readonly Event[];
  readonly state: State;
  /** Undefined when the decision recorded nothing. */
  readonly appended: AppendResult | undefined;
}

/**
 * Reads the stream, folds it, decides, and appends at exactly the revision it read, so a concurrent writer
 * to the same stream forces a re-read and a fresh decision instead of being overtaken. Domain refusals
 * (thrown by decide) pass through untouched.
 */
export async function handleCommand<Command, Event extends TypedEvent, State>(
  store: EventStore,
  streamName: string,
  decider: Decider<Command, Event, State>,
  command: Command,
  options: {
    metadata?: Record<string, unknown>;
    eventIds?: (event: Event, index: number) => string;
    maxAttempts?: number;
  } = {},
): Promise<HandleResult<Event, State>> {
  const maxAttempts = options.maxAttempts ?? 5;
  for (let attempt = 1; ; attempt++) {
    const recorded = await store.readStream(streamName);
    let state = decider.initialState();
    for (const e of recorded) state = decider.evolve(state, { type: e.type, data: e.data } as Event);
    const events = decider.decide(command, state);
    if (events.length === 0) return { events, state, appended: undefined };
    const toAppend: NewEvent[] = events.map((event, i) => ({
      id: options.eventIds?.(event, i) ?? randomUUID(),
      type: event.type,
      data: event.data,
      metadata: options.metadata,
    }));
    try {
      const expected = recorded.length === 0 ? 'no_stream' : recorded.at(-1)!.revision;
      const appended = await store.append(streamName, toAppend, expected);
      for (const event of events) state = decider.evolve(state, event);
      return { events, state, appended };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < maxAttempts) continue;
      throw error;
    }
  }
}
