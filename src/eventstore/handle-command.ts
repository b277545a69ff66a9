import { randomUUID } from 'node:crypto';
import { fullJitter, type Backoff } from '../infra/backoff.js';
import type { Decider } from '../domain/decider.js';
import { foldStream, forgetFold, keepFold, keptFold } from './folded-streams.js';
import {
  StreamContendedError,
  WrongExpectedRevisionError,
  type AppendResult,
  type EventStore,
  type NewEvent,
  type StreamAppend,
} from './port.js';

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

interface HandleOptions<Event> {
  metadata?: Record<string, unknown>;
  eventIds?: (event: Event, index: number) => string;
  /** Decisions tried before giving up with StreamContendedError (default DEFAULT_MAX_ATTEMPTS). */
  maxAttempts?: number;
}

const DEFAULT_MAX_ATTEMPTS = 12;
/** Full-jitter back-off between attempts. */
const BACKOFF: Backoff = { baseMs: 2, capMs: 200 };

/**
 * What a decision on one stream records: its own events, appends to other streams that must land with them
 * (one transaction on PostgreSQL), and whatever the caller wants back.
 */
export interface Decision<Event, Result> {
  readonly events: readonly Event[];
  readonly alongside?: readonly StreamAppend[];
  readonly result: Result;
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
  options: HandleOptions<Event> = {},
): Promise<HandleResult<Event, State>> {
  const outcome = await decideOnStream(
    store,
    streamName,
    decider,
    (state) => {
      const events = decider.decide(command, state);
      return { events, result: events };
    },
    options,
  );
  return { events: outcome.result, state: outcome.state, appended: outcome.appended[0] };
}

/**
 * The same optimistic loop for a decision that is not a plain decider command, or that also writes other
 * streams: `decide` runs again on a fresh read whenever the stream moved in between.
 *
 * Losing the race is normal, not an error. Within one process, decisions on one stream take turns (so a
 * burst on one hub or one device costs no wasted round trips); across processes the loser re-reads after
 * a full-jitter back-off. A decision that still loses after `maxAttempts` fails with StreamContendedError,
 * which the API answers 503 with Retry-After. A conflict on an alongside stream is the caller's to read:
 * it is thrown as it is.
 */
export async function decideOnStream<Event extends TypedEvent, State, Result>(
  store: EventStore,
  streamName: string,
  folding: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>,
  decide: (state: State) => Decision<Event, Result>,
  options: HandleOptions<Event> = {},
): Promise<{ result: Result; state: State; appended: AppendResult[] }> {
  return takeTurn(store, streamName, () => optimisticLoop(store, streamName, folding, decide, options));
}

async function optimisticLoop<Event extends TypedEvent, State, Result>(
  store: EventStore,
  streamName: string,
  folding: Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>,
  decide: (state: State) => Decision<Event, Result>,
  options: HandleOptions<Event>,
): Promise<{ result: Result; state: State; appended: AppendResult[] }> {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  // The first try decides on the fold this process kept, without reading: the append at its revision
  // checks it as a read would have. What no append checks (a refusal, a decision to record nothing) and a
  // kept fold that turned out stale are decided again on a fresh read, without counting as an attempt.
  let trustKept = true;
  for (let attempt = 1; ; attempt++) {
    const kept = trustKept ? keptFold(store, streamName, folding) : undefined;
    trustKept = false;
    const read = kept ?? (await foldStream(store, streamName, folding));
    let state = read.state;
    let decision: Decision<Event, Result>;
    try {
      decision = decide(state);
    } catch (error) {
      if (!kept) throw error;
      attempt--;
      continue;
    }
    if (kept && decision.events.length === 0) {
      attempt--;
      continue;
    }
    const alongside = decision.alongside ?? [];
    if (decision.events.length === 0 && alongside.length === 0) {
      return { result: decision.result, state, appended: [] };
    }
    const own: NewEvent[] = decision.events.map((event, i) => ({
      id: options.eventIds?.(event, i) ?? randomUUID(),
      type: event.type,
      data: event.data,
      metadata: options.metadata,
    }));
    const expectedRevision = read.revision < 0n ? 'no_stream' : read.revision;
    try {
      const appended = await store.appendMany([{ streamName, events: own, expectedRevision }, ...alongside]);
      for (const event of decision.events) state = folding.evolve(state, event);
      if (own.length > 0) {
        keepFold(store, streamName, folding, { state, revision: appended[0]!.nextRevision });
      }
      return { result: decision.result, state, appended };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError) || error.streamName !== streamName) throw error;
      // Normally another writer got in first; a store emptied under this process (a restore) looks the same.
      forgetFold(store, streamName, folding);
      if (kept) {
        attempt--;
        continue;
      }
      if (attempt >= maxAttempts) throw new StreamContendedError(streamName, attempt);
      await sleep(fullJitter(attempt, BACKOFF));
    }
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// Per store instance (one per process in production), the tail of the queue of decisions on each stream.
const turns = new WeakMap<EventStore, Map<string, Promise<unknown>>>();

/** Runs `work` after every decision on the same stream already queued in this process has settled. */
function takeTurn<T>(store: EventStore, streamName: string, work: () => Promise<T>): Promise<T> {
  let queues = turns.get(store);
  if (!queues) turns.set(store, (queues = new Map()));
  const previous = queues.get(streamName);
  const mine = previous ? previous.then(work, work) : work();
  const tail = mine.then(
    () => undefined,
    () => undefined,
  );
  queues.set(streamName, tail);
  void tail.then(() => {
    if (queues.get(streamName) === tail) queues.delete(streamName);
  });
  return mine;
}
