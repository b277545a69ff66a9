import { setTimeout as sleep } from 'node:timers/promises';
import { backoffCeiling } from '../../infra/backoff.js';
import { eventTypes } from '../../domain/events/index.js';
import { DAY_MS } from '../../domain/time.js';
import type { EventStore } from '../../eventstore/port.js';
import type { Logger } from '../../infra/logger.js';
import { LiveDirectory } from './directory.js';
import {
  FrameIds,
  KEY_BEFORE_EVERYTHING,
  LAST_FRAME_INDEX,
  isInsideEvent,
  keyAfterPosition,
  positionOfKey,
} from './frame-id.js';
import { LIVE_TYPES, framesOf, sourceEventTypes, type LiveFrame } from './frames.js';
import type { LiveStream } from './stream.js';

const READING_TYPES = eventTypes((d) => d.retention === 'readings');
const CATCH_UP_PAGE = 500;
// A failed subscription is tried again after 200 ms, doubling to at most 5 s while it keeps failing.
const RESUBSCRIBE_BACKOFF = { baseMs: 100, capMs: 5000 };

export interface LiveHubOptions {
  readonly store: EventStore;
  readonly logger: Logger;
  /** Frames kept in memory: resumes within them are served without reading the store. */
  readonly windowFrames: number;
  /** Reading events older than this are deleted from the store (KurrentDB: `$maxAge`). */
  readonly readingsRetentionDays: number;
  readonly now: () => number;
  /** The deployment's persisted secrets by name (cursor-keys.ts): frame ids are sealed under one. */
  readonly keyFor: (name: string) => Promise<Buffer>;
}

/** Streams of one project: those following every device, and those following some, by device. */
class ProjectStreams {
  readonly all = new Set<LiveStream>();
  readonly byDevice = new Map<string, Set<LiveStream>>();

  get empty(): boolean {
    return this.all.size === 0 && this.byDevice.size === 0;
  }
}

/**
 * One subscription to the event store's global order per process, turned into frames once and fanned out
 * to this process's streams. The last `windowFrames` frames stay in memory: every frame after `floorKey`
 * is there, up to `headKey`, the position the subscription has reached. A stream resuming at or after the
 * floor is served from memory; an older one reads the store page by page until it reaches the floor, then
 * joins in the same synchronous step that replays the window, so no frame is lost or doubled at the seam.
 * Every process builds the same frames with the same ids from the same events (frames.ts), so a client may
 * resume on any of them.
 *
 * With no stream open the hub rests: reading every reading and building its frames cost the ingest path
 * about a tenth of the serving process's CPU for a window nobody used. Resting, it drops the window and
 * stops its subscription; the next stream wakes it at the store's head (an empty window there), and a
 * resume older than that reads the store, as any resume older than the window does.
 */
export class LiveHub {
  readonly #options: LiveHubOptions;
  readonly #directory: LiveDirectory;
  readonly #sourceTypes = sourceEventTypes(LIVE_TYPES);
  readonly #abort = new AbortController();
  readonly #projects = new Map<string, ProjectStreams>();
  readonly #streams = new Set<LiveStream>();
  #window: LiveFrame[] = [];
  #windowStart = 0;
  #floorKey = KEY_BEFORE_EVERYTHING;
  #headKey = KEY_BEFORE_EVERYTHING;
  #headPosition: string | undefined;
  #started: Promise<void> | undefined;
  /** Set once `start` has read the secret; frames are built only after that. */
  #ids: FrameIds | undefined;
  #running: Promise<void> | undefined;
  /** Whether the subscription runs and the window fills; false while no stream is open. */
  #following = false;
  #waking: Promise<void> | undefined;
  #wakeFollower: (() => void) | undefined;

  constructor(options: LiveHubOptions) {
    this.#options = options;
    this.#directory = new LiveDirectory(options.store);
  }

  /** Starts the hub, resting until a stream opens; resolves once streams can be served. */
  start(): Promise<void> {
    this.#started ??= (async () => {
      this.#ids = await FrameIds.load(this.#options.keyFor);
      this.#running = this.#follow();
    })().catch((error: unknown) => {
      // The secret could not be read (database down): the next stream tries again.
      this.#started = undefined;
      throw error;
    });
    return this.#started;
  }

  get #frameIds(): FrameIds {
    if (!this.#ids) throw new Error('the live hub has not started');
    return this.#ids;
  }

  /** Ends every stream with stream_error shutdown and stops the subscription. */
  async close(): Promise<void> {
    this.#abort.abort();
    this.#wakeFollower?.();
    // Those still catching up too: they are not registered for live frames yet.
    for (const stream of this.#streams) stream.end('shutdown');
    this.#streams.clear();
    this.#projects.clear();
    await this.#running;
  }

  /** Every stream this process is serving, live or catching up. */
  get streamCount(): number {
    return this.#streams.size;
  }

  /**
   * Serves `stream` from `lastEventId` (exclusive) or, without one, from now. A resume the store can no
   * longer serve in full (readings past retention) or an id that is not one of ours first gets replay_gap.
   */
  async serve(stream: LiveStream, lastEventId: string | undefined): Promise<void> {
    await this.start();
    if (this.#abort.signal.aborted) return stream.end('shutdown');
    if (stream.closed) return;
    // Registered before waking, so the subscription cannot go back to rest under this stream.
    this.#streams.add(stream);
    await this.#follows();
    if (this.#abort.signal.aborted) return stream.end('shutdown');
    if (stream.closed) return;
    // Only now that the hub follows from a known point: an event appended once the client sees the answer
    // is one the stream delivers (after an unknown id, one its replay_gap covers).
    stream.respond();
    if (lastEventId === undefined) return this.#join(stream, this.#headKey);
    stream.options.metrics?.resumed();
    const decoded = this.#frameIds.decode(stream.projectId, lastEventId);
    if (
      !decoded ||
      !this.#options.store.isValidPosition(decoded.position) ||
      (await this.#unknown(decoded.position))
    ) {
      // The id to resume from is sealed for this project like any frame's: it does not show the head.
      const position = this.#headPosition ?? '0'.repeat(32);
      const now = this.#options.now();
      stream.control(
        'replay_gap',
        this.#gap(stream, 'unknown_id', [...stream.filter.types].sort(), null, new Date(now).toISOString()),
        this.#frameIds.encode(stream.projectId, position, LAST_FRAME_INDEX, now),
      );
      return this.#join(stream, this.#headKey);
    }
    if (stream.filter.types.has('telemetry')) {
      const cutoff = await this.#prunedBefore(decoded.position, decoded.recordedAtMs);
      if (cutoff !== undefined) {
        stream.control(
          'replay_gap',
          this.#gap(
            stream,
            'retention',
            ['telemetry'],
            new Date(decoded.recordedAtMs).toISOString(),
            cutoff.toISOString(),
          ),
        );
      }
    }
    stream.cursor = decoded.key;
    await this.#catchUp(stream);
  }

  detach(stream: LiveStream): void {
    this.#streams.delete(stream);
    this.#unregister(stream);
  }

  /** Takes `stream` off live delivery; it stays one of ours (the hub does not rest under it). */
  #unregister(stream: LiveStream): void {
    const streams = this.#projects.get(stream.projectId);
    if (!streams) return;
    streams.all.delete(stream);
    for (const deviceId of stream.filter.deviceIds ?? []) {
      const set = streams.byDevice.get(deviceId);
      set?.delete(stream);
      if (set?.size === 0) streams.byDevice.delete(deviceId);
    }
    if (streams.empty) this.#projects.delete(stream.projectId);
  }

  /** `types`: what may be missing: only readings expire, but an unknown id may have missed anything. */
  #gap(
    stream: LiveStream,
    reason: string,
    types: readonly string[],
    from: string | null,
    to: string,
  ): Record<string, unknown> {
    stream.options.metrics?.replayGap(reason);
    return {
      reason,
      types,
      from,
      to,
      deviceIds: stream.filter.deviceIds ? [...stream.filter.deviceIds] : null,
    };
  }

  /** A well-formed position past the end of the store: forged, or from another deployment. */
  async #unknown(position: string): Promise<boolean> {
    const store = this.#options.store;
    if (this.#headPosition !== undefined && store.comparePositions(position, this.#headPosition) <= 0)
      return false;
    const head = await store.headPosition();
    return head === undefined ? position !== '0'.repeat(32) : store.comparePositions(position, head) > 0;
  }

  /**
   * When readings after `position` may have been deleted: the cut-off before which they were. PostgreSQL
   * records the position of the newest deleted reading; KurrentDB expires them by age, so the frame's time
   * decides there.
   */
  async #prunedBefore(position: string, recordedAtMs: number): Promise<Date | undefined> {
    const { store, now, readingsRetentionDays } = this.#options;
    if (store.retention) {
      const retained = await store.retention(READING_TYPES);
      return retained && store.comparePositions(position, retained.horizon) <= 0
        ? retained.recordedBefore
        : undefined;
    }
    const cutoff = new Date(now() - readingsRetentionDays * DAY_MS);
    return recordedAtMs < cutoff.getTime() ? cutoff : undefined;
  }

  /** Reads the store after the stream's cursor until it reaches the window, then joins live. */
  async #catchUp(stream: LiveStream): Promise<void> {
    const store = this.#options.store;
    const types = sourceEventTypes(stream.filter.types);
    let bound: { after?: string; from?: string } = isInsideEvent(stream.cursor)
      ? { from: positionOfKey(stream.cursor) }
      : { after: positionOfKey(stream.cursor) };
    while (!stream.closed) {
      if (this.#abort.signal.aborted) return stream.end('shutdown');
      if (stream.cursor >= this.#floorKey) {
        // From memory, at the client's pace; once nothing is left after the cursor, join in the same step.
        const next = this.#window[this.#firstAfter(stream.cursor)];
        if (next === undefined) return this.#join(stream, stream.cursor);
        await stream.push(next);
        continue;
      }
      const page = await store.readAll({ ...bound, maxCount: CATCH_UP_PAGE, eventTypes: types });
      await this.#directory.prepare(page.events);
      for (const event of page.events) {
        for (const frame of framesOf(event, this.#directory, this.#frameIds)) await stream.push(frame);
        if (stream.closed) return;
      }
      if (page.lastPosition !== undefined) {
        stream.passTo(keyAfterPosition(page.lastPosition));
        bound = { after: page.lastPosition };
      }
      // The hub has not reached what this read saw yet: it will, shortly.
      if (page.atEnd && stream.cursor < this.#floorKey) await sleep(50);
    }
  }

  /**
   * A live stream that a frame took past its buffer bound: off live delivery, and once its client has read,
   * caught up from its cursor (the window or the store) at its pace, then joined again.
   */
  #fallBehind(stream: LiveStream): void {
    this.#unregister(stream);
    void (async () => {
      try {
        if (await stream.drained()) await this.#catchUp(stream);
      } catch (error) {
        this.#options.logger.warn({ err: error }, 'live stream catch-up failed');
        stream.end('unavailable');
      }
    })();
  }

  /** Synchronously: the window's frames after `cursor`, then registration for everything after them. */
  #join(stream: LiveStream, cursor: string): void {
    if (stream.closed) return;
    stream.passTo(cursor);
    for (let i = this.#firstAfter(stream.cursor); i < this.#window.length && !stream.closed; i++) {
      if (stream.offer(this.#window[i]!)) return this.#fallBehind(stream);
    }
    if (stream.closed) return;
    let streams = this.#projects.get(stream.projectId);
    if (!streams) this.#projects.set(stream.projectId, (streams = new ProjectStreams()));
    if (!stream.filter.deviceIds) streams.all.add(stream);
    for (const deviceId of stream.filter.deviceIds ?? []) {
      let set = streams.byDevice.get(deviceId);
      if (!set) streams.byDevice.set(deviceId, (set = new Set()));
      set.add(stream);
    }
  }

  #firstAfter(key: string): number {
    let low = this.#windowStart;
    let high = this.#window.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.#window[mid]!.key <= key) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** Wakes a resting hub at the store's head; resolves once the subscription follows from there. */
  #follows(): Promise<void> {
    if (this.#following) return Promise.resolve();
    this.#waking ??= (async () => {
      try {
        const head = await this.#options.store.headPosition();
        if (head !== undefined) {
          this.#headPosition = head;
          const key = keyAfterPosition(head);
          if (key > this.#headKey) this.#headKey = key;
        }
        this.#rest();
        this.#following = true;
        this.#wakeFollower?.();
      } finally {
        this.#waking = undefined;
      }
    })();
    return this.#waking;
  }

  /** Drops the window: nothing in it is served while no stream is open, and it would be stale on waking. */
  #rest(): void {
    this.#following = false;
    this.#window = [];
    this.#windowStart = 0;
    this.#floorKey = this.#headKey;
  }

  async #follow(): Promise<void> {
    const { store, logger } = this.#options;
    const signal = this.#abort.signal;
    let failures = 0;
    while (!signal.aborted) {
      if (!this.#following) {
        await new Promise<void>((resolve) => (this.#wakeFollower = resolve));
        this.#wakeFollower = undefined;
        continue;
      }
      try {
        const subscription = store.subscribeToAll({
          after: this.#headPosition,
          eventTypes: this.#sourceTypes,
          signal,
          batchSize: 1000,
        });
        for await (const batch of subscription) {
          failures = 0;
          if (this.#streams.size === 0) {
            this.#rest();
            break;
          }
          await this.#directory.prepare(batch.events);
          for (const event of batch.events)
            for (const frame of framesOf(event, this.#directory, this.#frameIds)) this.#publish(frame);
          if (batch.checkpoint !== undefined) {
            this.#headPosition = batch.checkpoint;
            const key = keyAfterPosition(batch.checkpoint);
            if (key > this.#headKey) this.#headKey = key;
          }
        }
      } catch (error) {
        if (signal.aborted) break;
        failures += 1;
        logger.warn({ err: error, failures }, 'live hub subscription failed; resubscribing');
        await sleep(backoffCeiling(failures, RESUBSCRIBE_BACKOFF), undefined, { signal }).catch(() => {});
      }
    }
  }

  #publish(frame: LiveFrame): void {
    this.#window.push(frame);
    const excess = this.#window.length - this.#windowStart - this.#options.windowFrames;
    if (excess > 0) {
      this.#windowStart += excess;
      this.#floorKey = this.#window[this.#windowStart - 1]!.key;
      if (this.#windowStart >= this.#options.windowFrames) {
        this.#window = this.#window.slice(this.#windowStart);
        this.#windowStart = 0;
      }
    }
    const streams = this.#projects.get(frame.projectId);
    if (!streams) return;
    // A stream taken off delivery while its set is iterated is not visited again (Set iteration allows it).
    for (const stream of streams.all) this.#offer(stream, frame);
    if (frame.deviceId !== null)
      for (const stream of streams.byDevice.get(frame.deviceId) ?? []) this.#offer(stream, frame);
    if (frame.hubId !== null && frame.hubId !== frame.deviceId)
      for (const stream of streams.byDevice.get(frame.hubId) ?? []) this.#offer(stream, frame);
  }

  #offer(stream: LiveStream, frame: LiveFrame): void {
    if (stream.offer(frame)) this.#fallBehind(stream);
  }
}
