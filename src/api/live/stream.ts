import type { ServerResponse } from 'node:http';
import type { LiveStreamMetrics } from '../../infra/metrics.js';
import type { LiveFrame, LiveType } from './frames.js';

/** What a stream asked for. Tenancy is not a filter: the hub only ever offers frames of the stream's project. */
export interface LiveFilter {
  readonly types: ReadonlySet<LiveType>;
  /** Devices (and, for pairing_update, hubs) to follow; undefined: every device of the project. */
  readonly deviceIds: ReadonlySet<string> | undefined;
  /** Narrows frames about a capability (telemetry, command_update); others pass. */
  readonly capabilities: ReadonlySet<string> | undefined;
}

function matches(filter: LiveFilter, frame: LiveFrame): boolean {
  if (!filter.types.has(frame.type)) return false;
  if (filter.deviceIds) {
    const about =
      (frame.deviceId !== null && filter.deviceIds.has(frame.deviceId)) ||
      (frame.hubId !== null && filter.deviceIds.has(frame.hubId));
    if (!about) return false;
  }
  return !filter.capabilities || frame.capability === null || filter.capabilities.has(frame.capability);
}

/** Why the server ends a stream; sent as the `stream_error` frame's reason just before it does. */
export type EndReason = 'shutdown' | 'too_slow' | 'token_expired' | 'token_revoked' | 'unavailable';

const RETRY_MS = 5000;

/** The headers of a stream's 200 (and of the answer to HEAD, which opens none). */
export const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream; charset=utf-8',
  'Cache-Control': 'no-store, no-transform',
  Connection: 'keep-alive',
  // Proxies such as nginx would otherwise hold frames back.
  'X-Accel-Buffering': 'no',
} as const;
const END_GRACE_MS = 10_000;

export interface LiveStreamOptions {
  readonly projectId: string;
  readonly clientId: string;
  /** The kid of the key that signed the token that opened the stream: revoking the key ends the stream. */
  readonly keyId: string;
  readonly filter: LiveFilter;
  readonly heartbeatMs: number;
  /** Bytes the socket may hold unsent before a live stream stops taking live frames and is caught up instead. */
  readonly maxBufferedBytes: number;
  /** How long a client may take none of its unsent bytes before it is cut as too slow. */
  readonly stallMs: number;
  /** When the token ends (epoch ms): the stream ends with it. */
  readonly expiresAtMs: number;
  readonly now: () => number;
  readonly onClose: (stream: LiveStream) => void;
  readonly metrics?: LiveStreamMetrics;
}

/**
 * One client's SSE response. Frames come either from a catch-up read (`push`, which waits for the socket to
 * drain) or from the hub (`offer`, which never waits). When a live frame takes the unsent bytes past the bound
 * the stream takes no more live frames and the hub catches it up from its cursor instead, at the client's pace:
 * a burst (the hub reading a backlog in one batch) must not cut a client that reads. Only a client that takes
 * none of its unsent bytes for `stallMs` is cut, with stream_error too_slow, and resumes by id. `cursor` is the
 * key of the last frame passed by; frames at or before it are dropped, which is what makes the switches
 * between catch-up and live seamless.
 */
export class LiveStream {
  cursor = '';
  #closed = false;
  #responded = false;
  #heartbeat: NodeJS.Timeout | undefined;
  #expiry: NodeJS.Timeout | undefined;
  #drained: (() => void) | undefined;
  /** Past its bound: live frames are not taken until the hub has caught the stream up. */
  #behind = false;

  constructor(
    private readonly res: ServerResponse,
    readonly options: LiveStreamOptions,
  ) {}

  get closed(): boolean {
    return this.#closed;
  }

  get projectId(): string {
    return this.options.projectId;
  }

  get clientId(): string {
    return this.options.clientId;
  }

  get keyId(): string {
    return this.options.keyId;
  }

  get filter(): LiveFilter {
    return this.options.filter;
  }

  /** Follows the connection and starts the token's deadline; `respond` begins the answer and the heartbeat. */
  open(): void {
    const res = this.res;
    res.on('close', () => this.#release());
    res.on('drain', () => this.#drained?.());
    this.options.metrics?.opened();
    this.#expiry = setTimeout(
      () => this.end('token_expired'),
      Math.max(0, this.options.expiresAtMs - this.options.now()),
    );
  }

  /**
   * Headers, then `retry` before anything else, then the heartbeat. The hub calls it once it has fixed where
   * the stream starts, so that an event appended after the client saw the answer begin is one the stream
   * delivers (a heartbeat due earlier must not begin it); whatever is written first (an early stream_error)
   * begins the answer itself.
   */
  respond(): void {
    if (this.#responded || this.#closed) return;
    this.#responded = true;
    this.res.writeHead(200, STREAM_HEADERS);
    this.res.socket?.setNoDelay(true);
    this.res.write(`retry: ${RETRY_MS}\n\n`);
    this.#heartbeat = setInterval(() => this.#write(': ping\n\n'), this.options.heartbeatMs);
  }

  /** A control frame (replay_gap): no id unless given, so the client's last id stays what it was. */
  control(type: 'replay_gap', data: Record<string, unknown>, id?: string): void {
    this.#write(`${id ? `id: ${id}\n` : ''}event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /**
   * Live delivery from the hub (and the window's replay, which holds every project's frames). True when this
   * frame took the stream past its bound: from then on it takes no live frame (its cursor stays on this one)
   * until `drained` has seen the client read; the hub is to catch it up from the cursor. (A bound below the
   * socket's high-water mark, 64 KiB from Node 22, acts as that mark: `drained` then returns at once.)
   */
  offer(frame: LiveFrame): boolean {
    if (this.#behind || !this.#takes(frame)) return false;
    this.#write(frame.text);
    this.options.metrics?.frameSent(frame.type);
    this.#behind = this.res.writableLength > this.options.maxBufferedBytes;
    return this.#behind;
  }

  /** Catch-up delivery: waits while the socket's buffer is full rather than cutting. */
  async push(frame: LiveFrame): Promise<void> {
    if (!this.#takes(frame)) return;
    this.#write(frame.text);
    this.options.metrics?.frameSent(frame.type);
    await this.drained();
  }

  /**
   * Resolves once the socket has taken what waited for it (Node's 'drain'), true if the stream is still open.
   * A client that has not taken it within `stallMs` is cut with too_slow (false). Partial progress cannot count:
   * Node reports bytes as sent only when a whole write request (all written in one turn of the event loop)
   * has gone to the kernel. So the rule is: take what waits, at most about the bound, within `stallMs`.
   */
  async drained(): Promise<boolean> {
    // 'drain' follows only a write that found the buffer past its high-water mark.
    while (!this.#closed && this.res.writableNeedDrain) {
      const drained = await new Promise<boolean>((resolve) => {
        const stalled = setTimeout(() => resolve(false), this.options.stallMs);
        this.#drained = () => {
          clearTimeout(stalled);
          resolve(true);
        };
      });
      this.#drained = undefined;
      if (drained) continue;
      // After the event loop was blocked, timers run before finished writes are seen: look once more after them.
      await new Promise((resolve) => setImmediate(resolve));
      if (this.res.writableNeedDrain) this.end('too_slow');
    }
    if (this.#closed) return false;
    this.#behind = false;
    return true;
  }

  /** Moves the cursor without a frame: a catch-up read passed positions that yield nothing for us. */
  passTo(key: string): void {
    if (key > this.cursor) this.cursor = key;
  }

  /** Says why, then ends the response. Idempotent; a stream the client closed just goes. */
  end(reason: EndReason): void {
    if (this.#closed) return;
    this.#write(`event: stream_error\ndata: ${JSON.stringify({ reason })}\n\n`);
    this.res.end();
    // A client that stopped reading would keep its unsent bytes (and the socket) for ever.
    const abandon = setTimeout(() => this.res.destroy(), END_GRACE_MS);
    abandon.unref();
    this.res.once('close', () => clearTimeout(abandon));
    this.#release(reason);
  }

  /** Moves the cursor past `frame`; true when it is new, of this project and wanted. */
  #takes(frame: LiveFrame): boolean {
    if (this.#closed || frame.key <= this.cursor) return false;
    this.cursor = frame.key;
    return frame.projectId === this.options.projectId && matches(this.options.filter, frame);
  }

  #write(text: string): void {
    if (this.#closed) return;
    this.respond();
    this.res.write(text);
  }

  /** Without a reason: the client closed the connection. */
  #release(reason: EndReason | 'client_closed' = 'client_closed'): void {
    if (this.#closed) return;
    this.#closed = true;
    this.options.metrics?.ended(reason);
    clearInterval(this.#heartbeat);
    clearTimeout(this.#expiry);
    this.#drained?.();
    this.options.onClose(this);
  }
}
