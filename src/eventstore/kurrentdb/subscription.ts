import {
  START,
  eventTypeFilter,
  excludeSystemEvents,
  type AllStreamSubscription,
  type Filter,
  type KurrentDBClient,
  type Position,
} from '@kurrent/kurrentdb-client';
import {
  EventStoreUnavailableError,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
  type SubscriptionBatch,
} from '../port.js';
import { isSystemEvent, toPortError, toRecordedEvent, type ClientResolvedEvent } from './mapping.js';
import { decodePosition, encodePosition } from './position.js';

const defaultBatchSize = 100;

type Signal = { kind: 'checkpoint'; position: string } | { kind: 'caughtUp' } | { kind: 'fellBehind' };
type Item = { kind: 'event'; event: RecordedEvent } | Signal;

/** A catch-up subscription to $all: each iteration opens its own server subscription. */
export function subscribeToAll(client: KurrentDBClient, options: SubscribeOptions): Subscription {
  return { [Symbol.asyncIterator]: () => batches(client, options) };
}

async function* batches(
  client: KurrentDBClient,
  options: SubscribeOptions,
): AsyncGenerator<SubscriptionBatch> {
  const { signal } = options;
  if (signal?.aborted) return;
  const fromPosition = options.after === undefined ? START : decodePosition(options.after);
  const wanted = options.eventTypes ? new Set(options.eventTypes) : undefined;
  const feed = new Feed(Math.max(1, options.batchSize ?? defaultBatchSize), options.after);
  const source = client.subscribeToAll({
    // Exclusive of fromPosition, like `after`.
    fromPosition,
    filter: serverFilter(options.eventTypes, (position) =>
      feed.signal({ kind: 'checkpoint', position: encodePosition(position) }),
    ),
  });
  feed.attach(source);

  const onEnd = () => feed.fail(new EventStoreUnavailableError('KurrentDB ended the $all subscription'));
  const onAbort = () => feed.stop();
  // One list, so that the finally block takes off exactly the listeners put on here.
  const listeners: readonly (readonly [string, (arg: unknown) => void])[] = [
    ['data', (resolved) => feed.receive(resolved as ClientResolvedEvent, wanted)],
    ['caughtUp', () => feed.signal({ kind: 'caughtUp' })],
    ['fellBehind', () => feed.signal({ kind: 'fellBehind' })],
    ['error', (error) => feed.fail(toPortError(error))],
    ['end', onEnd],
    ['close', onEnd],
  ];
  for (const [name, listener] of listeners) source.on(name, listener);
  signal?.addEventListener('abort', onAbort, { once: true });

  try {
    for (;;) {
      const batch = await feed.next();
      if (!batch) return;
      yield batch;
    }
  } finally {
    signal?.removeEventListener('abort', onAbort);
    feed.stop();
    for (const [name, listener] of listeners) source.off(name, listener);
    // The cancelled gRPC call may still report an error; with no listener it would crash the process.
    source.on('error', () => {});
    await source.unsubscribe().catch(() => {});
  }
}

function serverFilter(
  eventTypes: readonly string[] | undefined,
  checkpointReached: (p: Position) => void,
): Filter {
  // checkpointInterval 1 = a checkpoint every 32 events the server scanned past (its search window).
  const common = {
    checkpointInterval: 1,
    checkpointReached: (_s: unknown, p: Position) => checkpointReached(p),
  };
  if (!eventTypes || eventTypes.length === 0) return excludeSystemEvents(common);
  // Anchored: the server's regex filter matches anywhere in the type, and a prefix filter would let
  // "DeviceAdoptedV2" through for "DeviceAdopted".
  return eventTypeFilter({ ...common, regex: `^(?:${eventTypes.map(escapeRegex).join('|')})$` });
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\#]/g, '\\$&');
}

/**
 * Orders what the client reports into one queue the iterator drains. The client emits `caughtUp` and
 * calls `checkpointReached` while events pushed before them may still sit in its readable buffer; such a
 * signal is held back until those events were delivered, so a checkpoint never passes an undelivered event.
 */
class Feed {
  private readonly items: Item[] = [];
  private readonly held: { releaseAt: number; signal: Signal }[] = [];
  private delivered = 0;
  private live = false;
  private stopped = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private checkpoint: string | undefined;
  private source!: AllStreamSubscription;

  constructor(
    private readonly batchSize: number,
    after: string | undefined,
  ) {
    this.checkpoint = after;
  }

  attach(source: AllStreamSubscription): void {
    this.source = source;
  }

  receive(resolved: ClientResolvedEvent, wanted: ReadonlySet<string> | undefined): void {
    this.delivered++;
    const event = resolved.event;
    if (event?.position) {
      if (isSystemEvent(event) || (wanted && !wanted.has(event.type))) {
        // The server filter should have dropped it; still move the checkpoint past it.
        this.push({ kind: 'checkpoint', position: encodePosition(event.position) });
      } else {
        this.push({ kind: 'event', event: toRecordedEvent(event) });
      }
    }
    while (this.held[0] && this.held[0].releaseAt <= this.delivered) this.push(this.held.shift()!.signal);
  }

  signal(signal: Signal): void {
    // Everything pushed into the client's buffer so far: delivered plus still buffered.
    const releaseAt = this.delivered + this.source.readableLength;
    if (releaseAt <= this.delivered && this.held.length === 0) this.push(signal);
    else this.held.push({ releaseAt, signal });
  }

  fail(error: Error): void {
    if (this.stopped || this.failure) return;
    this.failure = error;
    this.notify();
  }

  stop(): void {
    this.stopped = true;
    this.notify();
  }

  /** The next batch; undefined once stopped. Queued items are delivered before a failure is thrown. */
  async next(): Promise<SubscriptionBatch | undefined> {
    for (;;) {
      if (this.stopped) return undefined;
      if (this.items.length === 0) {
        if (this.failure) throw this.failure;
        await new Promise<void>((resolve) => (this.wake = resolve));
        // Let events that arrived in the same network read join this batch.
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      const batch = this.take();
      if (this.source.isPaused() && this.items.length <= this.batchSize) this.source.resume();
      if (batch) return batch;
    }
  }

  private take(): SubscriptionBatch | undefined {
    const events: RecordedEvent[] = [];
    let advanced = false;
    while (this.items.length > 0 && events.length < this.batchSize) {
      const item = this.items[0]!;
      if (item.kind === 'caughtUp' || item.kind === 'fellBehind') {
        if (events.length > 0) break;
        this.items.shift();
        this.live = item.kind === 'caughtUp';
        if (this.live) return { events: [], checkpoint: this.checkpoint, caughtUp: true };
        continue;
      }
      this.items.shift();
      const position = item.kind === 'event' ? item.event.position : item.position;
      // Positions are fixed-width hex, so string order is global order; checkpoints only move forward.
      if (this.checkpoint === undefined || position > this.checkpoint) {
        this.checkpoint = position;
        advanced = true;
      }
      if (item.kind === 'event') events.push(item.event);
    }
    if (events.length > 0) return { events, checkpoint: this.checkpoint, caughtUp: false };
    // Once live, an empty batch passes on progress over filtered-out events (the port's "caught up" batch);
    // while catching up that progress rides on the caught-up batch instead.
    if (advanced && this.live) return { events: [], checkpoint: this.checkpoint, caughtUp: true };
    return undefined;
  }

  private push(item: Item): void {
    // Nothing is queued after a failure: the iterator ends at the failure, and a resume starts from the
    // last checkpoint it handed out.
    if (this.failure) return;
    this.items.push(item);
    // Backpressure: a paused client stops reading from gRPC once its own buffer is full.
    if (this.items.length >= this.batchSize * 4) this.source.pause();
    this.notify();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
