import type { StreamFrame } from './live-check.js';
import { retryAfterMs, type SoakApi } from './soak-api.js';

export interface LiveFollowerCounts {
  /** Streams opened (200), and of those the ones opened again after an earlier stream of that client. */
  connections: number;
  reconnects: number;
  /** Streams that broke without a stream_error: the api role was killed under them. */
  lostConnections: number;
  /** Streams the server ended with a stream_error, by reason (shutdown, too_slow, token_expired, ...). */
  serverEnds: Record<string, number>;
  /** Connection attempts that found nobody listening (the api role down or starting). */
  refusedConnections: number;
  /** Answers other than 200: 401 (a new token follows), 429 and 5xx (tried again). */
  refusedStreams: Record<string, number>;
  /** replay_gap frames: the server said it could not resume exactly. Never expected here. */
  replayGaps: number;
}

/**
 * SSE clients of GET /v1/live?types=telemetry on the api role, as an application would run them: each keeps
 * the id of the last frame it received and resumes with Last-Event-ID whenever its stream ends, whether the
 * server ended it or the api role was killed under it, trying again until the role is back. `content` keeps
 * what is compared of a frame's data (a digest keeps a long soak's memory small).
 */
export class LiveFollowers {
  readonly received: StreamFrame[][];
  readonly counts: LiveFollowerCounts = {
    connections: 0,
    reconnects: 0,
    lostConnections: 0,
    serverEnds: {},
    refusedConnections: 0,
    refusedStreams: {},
    replayGaps: 0,
  };
  /** Answers the followers cannot go on from (a 400 or 403), and frames of a type they did not ask for. */
  readonly errors: string[] = [];
  readonly #api: SoakApi;
  readonly #content: (data: string) => string;
  readonly #stop = new AbortController();
  readonly #connected: boolean[];
  #running: Promise<void>[] = [];

  constructor(api: SoakApi, clients: number, content: (data: string) => string = (data) => data) {
    this.#api = api;
    this.#content = content;
    this.received = Array.from({ length: clients }, () => []);
    this.#connected = this.received.map(() => false);
  }

  start(): void {
    this.#running = this.received.map((_, c) => this.#follow(c));
  }

  /** Clients that have had a stream open at least once. */
  get following(): number {
    return this.#connected.filter(Boolean).length;
  }

  /** True when every client's last frame is `lastId`. */
  reached(lastId: string | undefined): boolean {
    return this.received.every((frames) => frames.at(-1)?.id === lastId);
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.all(this.#running);
  }

  async #follow(c: number): Promise<void> {
    const frames = this.received[c]!;
    const signal = AbortSignal.any([this.#stop.signal, this.#api.signal]);
    const pause = (ms?: number) => this.#api.pause(ms, signal);
    while (!signal.aborted) {
      let token: string;
      try {
        token = await this.#api.token(signal);
      } catch {
        return;
      }
      const last = frames.at(-1)?.id;
      let response: Response;
      try {
        response = await fetch(`${this.#api.baseUrl}/v1/live?types=telemetry`, {
          headers: {
            Authorization: `Bearer ${token}`,
            Accept: 'text/event-stream',
            ...(last ? { 'Last-Event-ID': last } : {}),
          },
          signal,
        });
      } catch {
        if (signal.aborted) return;
        this.counts.refusedConnections += 1;
        await pause();
        continue;
      }
      if (response.status !== 200 || !response.body) {
        const status = String(response.status);
        const text = await response.text().catch(() => '');
        this.counts.refusedStreams[status] = (this.counts.refusedStreams[status] ?? 0) + 1;
        if (response.status === 401) this.#api.renew(token);
        else if (response.status === 429 || response.status >= 500)
          await pause(retryAfterMs(response.headers.get('retry-after')));
        else {
          this.errors.push(`client ${c}: ${status} ${text.slice(0, 200)}`);
          return;
        }
        continue;
      }
      this.counts.connections += 1;
      if (this.#connected[c]) this.counts.reconnects += 1;
      this.#connected[c] = true;
      let ended: string | undefined;
      try {
        for await (const event of sseEvents(response.body)) {
          if (event.event === 'telemetry' && event.id !== undefined)
            frames.push({ id: event.id, text: this.#content(event.data) });
          else if (event.event === 'stream_error')
            ended = (JSON.parse(event.data) as { reason: string }).reason;
          else if (event.event === 'replay_gap') this.counts.replayGaps += 1;
          else this.errors.push(`client ${c}: unexpected ${event.event} frame`);
        }
      } catch {
        // The connection broke: the api role was killed, or the soak stops.
      }
      if (signal.aborted) return;
      if (ended === undefined) this.counts.lostConnections += 1;
      else this.counts.serverEnds[ended] = (this.counts.serverEnds[ended] ?? 0) + 1;
      if (ended === 'token_expired') this.#api.renew(token);
      await pause(100);
    }
  }
}

interface SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
}

/**
 * The events of a text/event-stream body as our server writes it: blocks of `field: value` lines ending in
 * a blank line, one line per field, `\n` line ends. Comments (`: ping`) and `retry` yield nothing. Not a
 * general parser: the reference client's (examples/live-client) is one, but it imports nothing from src/
 * and src/ nothing from it.
 */
async function* sseEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = pending.indexOf('\n\n')) >= 0) {
      const fields = new Map<string, string>();
      for (const line of pending.slice(0, end).split('\n')) {
        const colon = line.indexOf(':');
        if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).replace(/^ /, ''));
      }
      pending = pending.slice(end + 2);
      const data = fields.get('data');
      if (data !== undefined) yield { id: fields.get('id'), event: fields.get('event') ?? 'message', data };
    }
  }
}
