import type { ServerResponse } from 'node:http';
import type { LiveFrame, LiveType } from './frames.js';

/** What a stream asked for. Tenancy is not a filter: the hub only ever offers frames of the stream's project. */
export interface LiveFilter {
  readonly types: ReadonlySet<LiveType>;
  /** Devices (and, for pairing_update, hubs) to follow; undefined: every device of the project. */
  readonly deviceIds: ReadonlySet<string> | undefined;
  /** Narrows frames about a capability (telemetry, command_update); others pass. */
  readonly capabilities: ReadonlySet<string> | undefined;
}

export function matches(filter: LiveFilter, frame: LiveFrame): boolean {
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

export const RETRY_MS = 5000;
const END_GRACE_MS = 10_000;

export interface LiveStreamOptions {
  readonly projectId: string;
  readonly clientId: string;
  readonly filter: LiveFilter;
  readonly heartbeatMs: number;
  /** Bytes the socket may hold unsent before a live stream is cut as too slow. */
  readonly maxBufferedBytes: number;
  /** When the token ends (epoch ms): the stream ends with it. */
  readonly expiresAtMs: number;
  readonly now: () => number;
  readonly onClose: (stream: LiveStream) => void;
}

/**
 * One client's SSE response. Frames come either from a catch-up read (`push`, which waits for the socket to
 * drain) or from the hub (`offer`, which never waits: a client whose unsent bytes pass the bound is cut with
 * stream_error too_slow and resumes by id). `cursor` is the key of the last frame passed by; frames at or
 * before it are dropped, which is what makes the switch from catch-up to live seamless.
 */
export class LiveStream {
  cursor = '';
  #closed = false;
  #heartbeat: NodeJS.Timeout | undefined;
  #expiry: NodeJS.Timeout | undefined;
  #drained: (() => void) | undefined;

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

  get filter(): LiveFilter {
    return this.options.filter;
  }

  /** Headers, then `retry` before anything else, then the heartbeat and the token's deadline. */
  open(): void {
    const res = this.res;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-store, no-transform',
      Connection: 'keep-alive',
      // Proxies such as nginx would otherwise hold frames back.
      'X-Accel-Buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    res.on('close', () => this.#release());
    res.on('drain', () => this.#drained?.());
    this.#write(`retry: ${RETRY_MS}\n\n`);
    this.#heartbeat = setInterval(() => this.#write(': ping\n\n'), this.options.heartbeatMs);
    this.#expiry = setTimeout(
      () => this.end('token_expired'),
      Math.max(0, this.options.expiresAtMs - this.options.now()),
    );
  }

  /** A control frame (replay_gap): no id unless given, so the client's last id stays what it was. */
  control(type: 'replay_gap', data: Record<string, unknown>, id?: string): void {
    this.#write(`${id ? `id: ${id}\n` : ''}event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Live delivery from the hub (and the window's replay, which holds every project's frames). */
  offer(frame: LiveFrame): void {
    if (!this.#takes(frame)) return;
    this.#write(frame.text);
    if (this.res.writableLength > this.options.maxBufferedBytes) this.end('too_slow');
  }

  /** Catch-up delivery: waits while the socket's buffer is full rather than cutting. */
  async push(frame: LiveFrame): Promise<void> {
    if (!this.#takes(frame)) return;
    this.#write(frame.text);
    // 'drain' follows only a write that found the buffer past its high-water mark.
    while (!this.#closed && this.res.writableNeedDrain) {
      await new Promise<void>((resolve) => (this.#drained = resolve));
    }
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
    this.#release();
  }

  /** Moves the cursor past `frame`; true when it is new, of this project and wanted. */
  #takes(frame: LiveFrame): boolean {
    if (this.#closed || frame.key <= this.cursor) return false;
    this.cursor = frame.key;
    return frame.projectId === this.options.projectId && matches(this.options.filter, frame);
  }

  #write(text: string): void {
    if (!this.#closed) this.res.write(text);
  }

  #release(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#heartbeat);
    clearTimeout(this.#expiry);
    this.#drained?.();
    this.options.onClose(this);
  }
}
