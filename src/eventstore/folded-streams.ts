import type { Decider } from '../domain/decider.js';
import type { EventStore } from './port.js';

type Folding<Event, State> = Pick<Decider<unknown, Event, State>, 'initialState' | 'evolve'>;

/** A stream folded up to `revision` (-1n: nothing read yet). */
export interface FoldedStream<State> {
  readonly state: State;
  readonly revision: bigint;
}

/** Streams kept folded per store and folding; the least recently used go first. */
export const FOLDED_STREAMS_KEPT = 5000;

const folded = new WeakMap<EventStore, WeakMap<object, Map<string, FoldedStream<unknown>>>>();

/**
 * The stream folded to its current end. A stream decided on again and again (a device taking commands, a
 * hub pairing) would otherwise be read and folded from its first event on every decision, so cost grew
 * with its history; instead this process keeps the last fold it saw and reads only the events after it.
 * Safe because folding is pure and events are never changed: whatever another process appended in
 * between is read and folded on top. The optimistic append still guards every decision; a fold kept here
 * is only where reading starts.
 */
export async function foldStream<Event, State>(
  store: EventStore,
  streamName: string,
  folding: Folding<Event, State>,
): Promise<FoldedStream<State>> {
  const start = keptFold(store, streamName, folding) ?? { state: folding.initialState(), revision: -1n };
  const recorded = await store.readStream(streamName, { fromRevision: start.revision + 1n });
  let state = start.state;
  for (const e of recorded) state = folding.evolve(state, { type: e.type, data: e.data } as Event);
  const current = { state, revision: recorded.at(-1)?.revision ?? start.revision };
  keepFold(store, streamName, folding, current);
  return current;
}

/** Records a fold this process just appended to (the state after its own events, at the revision written). */
export function keepFold<Event, State>(
  store: EventStore,
  streamName: string,
  folding: Folding<Event, State>,
  current: FoldedStream<State>,
): void {
  keep(keptFor(store, folding), streamName, current);
}

/** The fold this process last kept of a stream, if any: possibly behind the stream, never read here. */
export function keptFold<Event, State>(
  store: EventStore,
  streamName: string,
  folding: Folding<Event, State>,
): FoldedStream<State> | undefined {
  const kept = keptFor(store, folding);
  const current = kept.get(streamName) as FoldedStream<State> | undefined;
  if (current) {
    kept.delete(streamName);
    kept.set(streamName, current);
  }
  return current;
}

/** Drops the kept fold of a stream: after a lost race the next attempt reads it again from the start. */
export function forgetFold(store: EventStore, streamName: string, folding: object): void {
  keptFor(store, folding).delete(streamName);
}

function keptFor(store: EventStore, folding: object): Map<string, FoldedStream<unknown>> {
  let byFolding = folded.get(store);
  if (!byFolding) folded.set(store, (byFolding = new WeakMap()));
  let kept = byFolding.get(folding);
  if (!kept) byFolding.set(folding, (kept = new Map()));
  return kept;
}

function keep(
  kept: Map<string, FoldedStream<unknown>>,
  streamName: string,
  current: FoldedStream<unknown>,
): void {
  const previous = kept.get(streamName);
  // Two decisions may finish out of order: never replace a fold with an older one.
  if (previous && previous.revision > current.revision) return;
  kept.delete(streamName);
  kept.set(streamName, current);
  if (kept.size > FOLDED_STREAMS_KEPT) kept.delete(kept.keys().next().value!);
}
