import {
  BACKWARDS,
  END,
  KurrentDBClient,
  START,
  excludeSystemEvents,
  type AppendResult as ClientAppendResult,
} from '@kurrent/kurrentdb-client';
import {
  WrongExpectedRevisionError,
  type AppendResult,
  type BatchEntry,
  type BatchEntryResult,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadAllPage,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
} from '../port.js';
import {
  isMultiStreamAppendUnsupported,
  isStreamNotFound,
  isSystemEvent,
  toAppendStreamRequest,
  toEventData,
  toPortError,
  toRecordedEvent,
  toStreamState,
} from './mapping.js';
import { comparePositions, decodePosition, encodePosition, isPosition } from './position.js';
import { subscribeToAll } from './subscription.js';

export interface KurrentDbEventStoreOptions {
  /** How long /health waits for an answer before calling the store down. */
  readonly pingTimeoutMs?: number;
  /**
   * A client that prefers followers, for the catch-up subscriptions to $all (projectors, the live
   * stream), the steady load of a deployment. Everything that must see the latest write stays on
   * `client`, the leader: appends, stream reads (what deciders decide on), and paged $all reads, which
   * answer "is anything left beyond this checkpoint?" (catch-up, lag, the wait before a resend) and must
   * not take a follower's lag for the end of the log.
   */
  readonly followers?: KurrentDBClient;
}

/** Event store on KurrentDB / EventStoreDB (server 23.10 or later: positions on reads, caught-up signals). */
export class KurrentDbEventStore implements EventStore {
  readonly kind = 'kurrentdb' as const;
  /** Whether the server takes a multi-stream append; 'unknown' until appendMany first needs one. */
  private multiStreamAppend: 'unknown' | 'supported' | 'unsupported' = 'unknown';

  constructor(
    private readonly client: KurrentDBClient,
    private readonly options: KurrentDbEventStoreOptions = {},
  ) {}

  async append(
    streamName: string,
    events: readonly NewEvent[],
    expectedRevision: ExpectedRevision,
  ): Promise<AppendResult> {
    if (events.length === 0) throw new RangeError('append of no events');
    const streamState = toStreamState(expectedRevision);
    let result: ClientAppendResult;
    try {
      // The caller's ids go to the server, which answers a repeat of the same ids as a no-op (with 'any'
      // only while it still remembers them: KurrentDB's idempotency is best effort there).
      result = await this.client.appendToStream(streamName, events.map(toEventData), { streamState });
    } catch (error) {
      throw toPortError(error, { streamName, expectedRevision });
    }
    if (!result.success) {
      // Only reached with throwOnAppendFailure=false in the connection string; the client's revision is
      // unreliable on that path, so ask the stream.
      throw new WrongExpectedRevisionError(streamName, expectedRevision, await this.lastRevision(streamName));
    }
    return {
      nextRevision: result.nextExpectedRevision,
      position: await this.appendedPosition(streamName, events.length, result),
    };
  }

  /**
   * All streams or none, in one multi-stream append (KurrentDB 25.1 and later): the expectations of every
   * stream are checked together and a conflict on any of them writes nothing. A server older than 25.1 has
   * no such call; there the streams are appended one after another (the first failure stops the rest and
   * the streams before it stay written), and the adapter remembers not to ask again. docs/eventstore.md.
   */
  async appendMany(appends: readonly StreamAppend[]): Promise<AppendResult[]> {
    // Empty appends are skipped, as the Postgres adapter does.
    const nonEmpty = appends.filter((a) => a.events.length > 0);
    if (nonEmpty.length === 0) throw new RangeError('append of no events');
    // Reject a bad expectation before anything is written.
    for (const append of nonEmpty) toStreamState(append.expectedRevision);
    if (nonEmpty.length > 1 && this.multiStreamAppend !== 'unsupported') {
      try {
        const result = await this.client.multiStreamAppend(nonEmpty.map(toAppendStreamRequest));
        this.multiStreamAppend = 'supported';
        return await Promise.all(
          nonEmpty.map(async ({ streamName }) => {
            const response = result.responses.find((r) => r.streamName === streamName);
            if (!response) throw new Error(`multi-stream append answered nothing for stream ${streamName}`);
            return {
              nextRevision: response.revision,
              position: await this.positionOfRevision(streamName, response.revision),
            };
          }),
        );
      } catch (error) {
        if (!isMultiStreamAppendUnsupported(error)) throw toPortError(error);
        this.multiStreamAppend = 'unsupported';
      }
    }
    const results: AppendResult[] = [];
    for (const append of nonEmpty) {
      results.push(await this.append(append.streamName, append.events, append.expectedRevision));
    }
    return results;
  }

  /**
   * Entry by entry: KurrentDB has no multi-stream batch. A repeat of a recent event id is a no-op on the
   * server, but the server does not say so, so every entry reports `inserted: true`.
   */
  async appendBatch(entries: readonly BatchEntry[]): Promise<BatchEntryResult[]> {
    const results: BatchEntryResult[] = [];
    const seen = new Set<string>();
    for (const { streamName, event } of entries) {
      if (seen.has(event.id)) continue;
      seen.add(event.id);
      const { position } = await this.append(streamName, [event], 'any');
      results.push({ id: event.id, inserted: true, position });
    }
    return results;
  }

  async readStream(
    streamName: string,
    options: { fromRevision?: bigint; maxCount?: number } = {},
  ): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    try {
      const reads = this.client.readStream(streamName, {
        fromRevision: options.fromRevision ?? START,
        ...(options.maxCount === undefined ? {} : { maxCount: options.maxCount }),
      });
      for await (const resolved of reads) {
        if (resolved.event) events.push(toRecordedEvent(resolved.event));
      }
    } catch (error) {
      if (isStreamNotFound(error)) return [];
      throw toPortError(error);
    }
    return events;
  }

  /**
   * Filters on this side rather than with a server filter: reads report no checkpoints, and `lastPosition`
   * must move past system and filtered-out events so the next page does not scan them again.
   */
  async readAll(options: ReadAllOptions): Promise<ReadAllPage> {
    if (!(options.maxCount >= 1)) throw new RangeError(`maxCount must be >= 1, got ${options.maxCount}`);
    // `from` is inclusive, which is how KurrentDB reads anyway; `after` skips the event at its position.
    const { after } = options.from === undefined ? options : { after: undefined };
    const start = options.from ?? after;
    const fromPosition = start === undefined ? START : decodePosition(start);
    const wanted = options.eventTypes ? new Set(options.eventTypes) : undefined;
    const events: RecordedEvent[] = [];
    let lastPosition: string | undefined;
    let scanned = 0;
    try {
      // A read includes the event at fromPosition, which `after` excludes: ask for one more.
      const reads = this.client.readAll({
        fromPosition,
        maxCount: options.maxCount + (after === undefined ? 0 : 1),
      });
      for await (const resolved of reads) {
        const event = resolved.event;
        const position = event?.position ? encodePosition(event.position) : undefined;
        if (after !== undefined && position !== undefined && position <= after) continue;
        scanned++;
        if (position !== undefined) lastPosition = position;
        if (event && position !== undefined && !isSystemEvent(event) && (!wanted || wanted.has(event.type))) {
          events.push(toRecordedEvent(event));
        }
        // Only when the event at `after` is gone (scavenged) does the read return one too many.
        if (scanned >= options.maxCount) break;
      }
    } catch (error) {
      throw toPortError(error);
    }
    return { events, lastPosition, atEnd: scanned < options.maxCount };
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    if (options.after !== undefined) decodePosition(options.after);
    return subscribeToAll(this.options.followers ?? this.client, options);
  }

  async headPosition(): Promise<string | undefined> {
    try {
      const reads = this.client.readAll({
        direction: BACKWARDS,
        fromPosition: END,
        maxCount: 1,
        filter: excludeSystemEvents(),
      });
      for await (const resolved of reads) {
        const event = resolved.event;
        if (event?.position && !isSystemEvent(event)) return encodePosition(event.position);
      }
    } catch (error) {
      throw toPortError(error);
    }
    return undefined;
  }

  comparePositions(a: string, b: string): number {
    return comparePositions(a, b);
  }

  isValidPosition(position: string): boolean {
    return isPosition(position);
  }

  // countEvents is left out: KurrentDB cannot count events of a type without reading them all.

  async ping(): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    // The client retries discovery for a while when the server is down; /health should not wait that long.
    const timedOut = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.options.pingTimeoutMs ?? 2000);
    });
    try {
      return await Promise.race([this.probe(), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.client.dispose(), this.options.followers?.dispose()]);
  }

  private async probe(): Promise<boolean> {
    try {
      for await (const _ of this.client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 }))
        break;
      return true;
    } catch {
      return false;
    }
  }

  private async appendedPosition(
    streamName: string,
    count: number,
    result: ClientAppendResult,
  ): Promise<string> {
    const position = result.position;
    if (count === 1 && position && position.commit >= 0n && position.prepare >= 0n)
      return encodePosition(position);
    // An idempotent repeat comes back without a position (-1 on the server). For several events the
    // server answers with the commit's position, which is not documented to equal the last event's $all
    // position: read that event, so a reader waiting for this position waits for exactly this append.
    return this.positionOfRevision(streamName, result.nextExpectedRevision);
  }

  private async positionOfRevision(streamName: string, revision: bigint): Promise<string> {
    const [last] = await this.readStream(streamName, { fromRevision: revision, maxCount: 1 });
    if (!last) throw new Error(`stream ${streamName}: appended revision ${revision} not found`);
    return last.position;
  }

  private async lastRevision(streamName: string): Promise<bigint | 'no_stream'> {
    try {
      for await (const resolved of this.client.readStream(streamName, {
        direction: BACKWARDS,
        fromRevision: END,
        maxCount: 1,
      })) {
        if (resolved.event) return resolved.event.revision;
      }
    } catch (error) {
      if (!isStreamNotFound(error)) throw toPortError(error);
    }
    return 'no_stream';
  }
}

/**
 * From a `kurrentdb://` / `esdb://` connection string, or an existing client (tests inject a double). With
 * `followerReads`, a second client on the same connection string with `nodePreference=follower` serves the
 * $all subscriptions (KurrentDbEventStoreOptions.followers).
 */
export function createKurrentDbEventStore(
  source: string | KurrentDBClient,
  options: Omit<KurrentDbEventStoreOptions, 'followers'> & { followerReads?: boolean } = {},
): KurrentDbEventStore {
  const { followerReads, ...rest } = options;
  if (typeof source !== 'string') return new KurrentDbEventStore(source, rest);
  // The client accepts esdb:// but warns on the console about it; the two schemes mean the same.
  const connectionString = source.replace(/^esdb(\+discover)?:\/\//i, 'kurrentdb$1://');
  const client = KurrentDBClient.connectionString(connectionString);
  const followers = followerReads
    ? KurrentDBClient.connectionString(withNodePreference(connectionString, 'follower'))
    : undefined;
  return new KurrentDbEventStore(client, { ...rest, ...(followers && { followers }) });
}

/** The connection string with its node preference set, whatever it said (setting names ignore case). */
export function withNodePreference(connectionString: string, preference: 'leader' | 'follower'): string {
  const [address, query = ''] = connectionString.split('?', 2) as [string, string?];
  const settings = query.split('&').filter((setting) => setting !== '' && !/^nodepreference=/i.test(setting));
  return `${address}?${[...settings, `nodePreference=${preference}`].join('&')}`;
}
