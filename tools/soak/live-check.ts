import { LiveDirectory } from '../../src/api/live/directory.js';
import type { FrameIds } from '../../src/api/live/frame-id.js';
import { framesOf, sourceEventTypes, type LiveType } from '../../src/api/live/frames.js';
import type { EventStore } from '../../src/eventstore/port.js';

/** A frame as a client received it or the store yields it: its id and its data (or a digest of it). */
export interface StreamFrame {
  readonly id: string;
  readonly text: string;
}

/**
 * Every frame of `types` the project's events yield, in store order, built from the store by the code the
 * live stream builds its frames with (src/api/live/frames.ts): what a client following from the start would
 * have received, with the ids the service seals (`ids` from the service's database: FrameIds.load). `content`
 * maps a frame's data as the clients' side does.
 */
export async function framesInStore(
  store: Pick<EventStore, 'readAll' | 'readStream'>,
  ids: FrameIds,
  projectId: string,
  types: readonly LiveType[],
  content: (data: string) => string = (data) => data,
): Promise<StreamFrame[]> {
  const directory = new LiveDirectory(store);
  const wanted = new Set<string>(types);
  const frames: StreamFrame[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await store.readAll({ after, maxCount: 2000, eventTypes: sourceEventTypes(types) });
    await directory.prepare(page.events);
    for (const event of page.events) {
      for (const frame of framesOf(event, directory, ids)) {
        if (frame.projectId !== projectId || !wanted.has(frame.type)) continue;
        // The frame's text is `id: …\nevent: …\ndata: …\n\n`.
        const [idLine, , dataLine] = frame.text.split('\n');
        frames.push({ id: idLine!.slice('id: '.length), text: content(dataLine!.slice('data: '.length)) });
      }
    }
    if (page.lastPosition !== undefined) after = page.lastPosition;
    if (page.atEnd) return frames;
  }
}

export interface LiveComparison {
  readonly clients: number;
  /** Frames the clients received, all together. */
  readonly framesCompared: number;
  /** Frames in the store after a client's first frame that the client never received. */
  readonly gaps: number;
  /** Frames a client received more than once. */
  readonly duplicates: number;
  /** Frames the store yields before the frame the client received before them (ids are opaque: store order). */
  readonly outOfOrder: number;
  /** Frames whose id the store does not yield, and frames whose data differs from the store's. */
  readonly unknown: number;
  readonly altered: number;
  /** Clients that received no frame at all: nothing of theirs could be compared. */
  readonly silentClients: number;
  /** Clients whose frames are not exactly the store's from their first frame on, and where they first differ. */
  readonly clientsDiffering: number;
  readonly mismatches: readonly {
    client: number;
    at: number;
    got: readonly StreamFrame[];
    want: readonly StreamFrame[];
    lengths: readonly [number, number];
  }[];
}

/**
 * Compares each client's frames with the frames the store yields from that client's first frame on: the same
 * frames (id and data), each once, in order. A client may start anywhere (it joined live); it must then miss
 * nothing, whatever happened to its connections.
 */
export function compareLiveFrames(
  received: readonly (readonly StreamFrame[])[],
  expected: readonly StreamFrame[],
): LiveComparison {
  const index = new Map(expected.map((f, i) => [f.id, i]));
  // The tallies, in the order the comparison reports them.
  const tally = {
    framesCompared: 0,
    gaps: 0,
    duplicates: 0,
    outOfOrder: 0,
    unknown: 0,
    altered: 0,
    silentClients: 0,
  };
  const mismatches: LiveComparison['mismatches'][number][] = [];
  received.forEach((frames, client) => {
    tally.framesCompared += frames.length;
    if (frames.length === 0) {
      tally.silentClients += 1;
      return;
    }
    const seen = new Set<string>();
    frames.forEach((frame, i) => {
      const stored = index.get(frame.id);
      if (stored === undefined) tally.unknown += 1;
      else if (expected[stored]!.text !== frame.text) tally.altered += 1;
      if (seen.has(frame.id)) tally.duplicates += 1;
      seen.add(frame.id);
      const before = i > 0 ? index.get(frames[i - 1]!.id) : undefined;
      if (stored !== undefined && before !== undefined && !(stored > before)) tally.outOfOrder += 1;
    });
    const start = index.get(frames[0]!.id);
    const want = start === undefined ? [] : expected.slice(start);
    tally.gaps += want.filter((f) => !seen.has(f.id)).length;
    // Item by item: a deep-equal diff of thousands of frames would take minutes to print.
    let at = want.findIndex((f, i) => frames[i]?.id !== f.id || frames[i]?.text !== f.text);
    if (at < 0 && frames.length !== want.length) at = want.length;
    if (at >= 0) {
      mismatches.push({
        client,
        at,
        got: frames.slice(at, at + 2),
        want: want.slice(at, at + 2),
        lengths: [frames.length, want.length],
      });
    }
  });
  return {
    clients: received.length,
    ...tally,
    clientsDiffering: mismatches.length,
    mismatches: mismatches.slice(0, 3),
  };
}

/** True when every client received exactly the store's frames from its first one on. */
export const sawNoGap = (c: Omit<LiveComparison, 'mismatches'>): boolean =>
  c.clientsDiffering === 0 &&
  c.gaps === 0 &&
  c.duplicates === 0 &&
  c.outOfOrder === 0 &&
  c.unknown === 0 &&
  c.altered === 0 &&
  c.silentClients === 0;
