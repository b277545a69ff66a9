import { parseSse } from './sse.js';

/**
 * Reference client of GET /v1/live, written as an application would write it (it knows only the public
 * interface): it gets a token with client credentials, follows the stream, remembers the last frame id and
 * sends it back on every reconnect, waits `retry` between connections, gets a new token on 401 or when the
 * server ends the stream for a reason about the token, and backfills from the telemetry endpoint when told
 * data was missed (replay_gap). See README.md next to this file.
 */
export interface LiveFrame {
  readonly id: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
}

export interface ReplayGap {
  readonly reason: string;
  readonly types: readonly string[];
  readonly from: string | null;
  readonly to: string;
  readonly deviceIds: readonly string[] | null;
}

/**
 * How the client authenticates at the token endpoint (RFC 6749 §2.3.1): HTTP Basic, or `client_id` and
 * `client_secret` in the form. A client created with `--auth basic` must use `basic`; one created with
 * `--auth post` may use either.
 */
export type ClientAuth = 'basic' | 'post';

/** Stream ends that say nothing about the token: reconnect with the one held. Any other reason renews it. */
const CONNECTION_REASONS: ReadonlySet<unknown> = new Set(['shutdown', 'too_slow', 'unavailable']);

export interface LiveClientOptions {
  /** The service's base URL, path included: https://host/devcloud serves https://host/devcloud/v1/live. */
  readonly baseUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  /** Default `basic`, which every client of the service may use. */
  readonly clientAuth?: ClientAuth;
  /** Narrowing filters, as the query parameters of GET /v1/live. */
  readonly types?: readonly string[];
  readonly deviceIds?: readonly string[];
  readonly capabilities?: readonly string[];
  readonly heartbeatSeconds?: number;
  /** Resume after this frame id on the first connection. */
  readonly lastEventId?: string;
  readonly onFrame: (frame: LiveFrame) => void | Promise<void>;
  /** Telemetry answers fetched to cover a replay_gap, one per device. */
  readonly onBackfill?: (deviceId: string, telemetry: unknown, gap: ReplayGap) => void | Promise<void>;
  /** Each stream_error, 429 or dropped connection: for logs. */
  readonly onNotice?: (notice: string) => void;
}

export class LiveClient {
  readonly #baseUrl: string;
  #token: string | undefined;
  #lastEventId: string | undefined;
  #retryMs = 5000;
  #connections = 0;

  constructor(private readonly options: LiveClientOptions) {
    this.#lastEventId = options.lastEventId;
    const base = new URL(options.baseUrl);
    // Paths are appended to the base's own path, which `new URL('/v1/…', base)` would replace.
    this.#baseUrl = base.origin + base.pathname.replace(/\/+$/, '');
  }

  get lastEventId(): string | undefined {
    return this.#lastEventId;
  }

  get connections(): number {
    return this.#connections;
  }

  /** Follows the stream until `signal` aborts; a second 401 in a row is final and throws. */
  async run(signal: AbortSignal): Promise<void> {
    let unauthorized = 0;
    while (!signal.aborted) {
      let wait = this.#retryMs;
      try {
        this.#token ??= await this.#requestToken(signal);
        const response = await fetch(this.#url(), {
          headers: {
            Authorization: `Bearer ${this.#token}`,
            Accept: 'text/event-stream',
            ...(this.#lastEventId ? { 'Last-Event-ID': this.#lastEventId } : {}),
          },
          signal,
        });
        if (response.status === 401) {
          await response.body?.cancel();
          this.#token = undefined;
          if (++unauthorized >= 2) throw new Error('live stream: 401 twice with a fresh token');
          continue;
        }
        unauthorized = 0;
        if (response.status === 429 || response.status >= 500) {
          await response.body?.cancel();
          wait = retryAfterMs(response.headers.get('retry-after')) ?? this.#retryMs;
          this.options.onNotice?.(`status ${response.status}`);
        } else if (response.status !== 200 || !response.body) {
          throw new Error(`live stream: ${response.status} ${await response.text()}`);
        } else {
          this.#connections += 1;
          await this.#follow(response.body, signal);
        }
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof TryLater) {
          wait = error.waitMs ?? this.#retryMs;
          this.options.onNotice?.(error.message);
        } else if (error instanceof Error && error.message.startsWith('live stream:')) {
          throw error;
        } else {
          this.options.onNotice?.(`connection lost: ${(error as Error).message}`);
        }
      }
      await delay(wait, signal);
    }
  }

  async #follow(body: AsyncIterable<Uint8Array>, signal: AbortSignal): Promise<void> {
    for await (const item of parseSse(body)) {
      if (signal.aborted) return;
      if (item.kind === 'retry') this.#retryMs = item.ms;
      if (item.kind !== 'event') continue;
      const data = JSON.parse(item.data) as Record<string, unknown>;
      if (item.event === 'stream_error') {
        this.options.onNotice?.(`stream_error ${String(data.reason)}`);
        // token_expired, token_revoked (a revoked signing key: the new token comes from another key and the
        // stream resumes) and any reason this client does not know: the token may be dead, so the reconnect
        // starts with a new one. A revoked client's token request fails: run() throws.
        if (!CONNECTION_REASONS.has(data.reason)) this.#token = undefined;
        continue;
      }
      if (item.event === 'replay_gap') await this.#backfill(data as unknown as ReplayGap, signal);
      else if (item.id !== undefined) await this.options.onFrame({ id: item.id, type: item.event, data });
      // Only once handled: a backfill or handler that fails sees the frame again after the reconnect.
      if (item.id !== undefined) this.#lastEventId = item.id;
    }
  }

  /** Asks the telemetry endpoint for what the stream could not replay, device by device. */
  async #backfill(gap: ReplayGap, signal: AbortSignal): Promise<void> {
    if (!this.options.onBackfill || gap.from === null) return;
    const devices = gap.deviceIds ?? (await this.#deviceIds(signal));
    const hours = (Date.parse(gap.to) - Date.parse(gap.from)) / 3_600_000;
    const resolution = hours <= 24 ? 'raw' : '1h';
    for (const deviceId of devices) {
      const query = new URLSearchParams({ from: gap.from, to: gap.to, resolution });
      const telemetry = await this.#get(
        `/v1/devices/${encodeURIComponent(deviceId)}/telemetry?${query}`,
        signal,
      );
      if (telemetry !== undefined) await this.options.onBackfill(deviceId, telemetry, gap);
    }
  }

  /** Every device of the project: list envelopes are read tolerantly (spec, Versioning 3). */
  async #deviceIds(signal: AbortSignal): Promise<string[]> {
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = (await this.#get(
        `/v1/devices${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
        signal,
      )) as Record<string, unknown> | unknown[] | undefined;
      if (page === undefined) break;
      const items = (Array.isArray(page) ? page : (page.devices ?? page.items ?? page.data ?? [])) as {
        id?: string;
        publicId?: string;
        deviceId?: string;
      }[];
      for (const d of items) {
        const id = d.id ?? d.publicId ?? d.deviceId;
        if (id) ids.push(id);
      }
      cursor = Array.isArray(page)
        ? undefined
        : ((page.nextCursor ?? page.next_cursor ?? page.cursor) as string | undefined) || undefined;
    } while (cursor);
    return ids;
  }

  async #get(path: string, signal: AbortSignal): Promise<unknown> {
    for (let attempt = 0; attempt < 2; attempt++) {
      this.#token ??= await this.#requestToken(signal);
      const response = await fetch(this.#endpoint(path), {
        headers: { Authorization: `Bearer ${this.#token}` },
        signal,
      });
      if (response.status === 401) {
        this.#token = undefined;
        continue;
      }
      if (!response.ok) {
        this.options.onNotice?.(`GET ${path}: ${response.status}`);
        return undefined;
      }
      return response.json();
    }
    return undefined;
  }

  async #requestToken(signal: AbortSignal): Promise<string> {
    const { clientId, clientSecret, clientAuth = 'basic' } = this.options;
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded' };
    if (clientAuth === 'basic') {
      // RFC 6749 §2.3.1: each part form-urlencoded, then joined by ':' and base64-encoded.
      headers.Authorization = `Basic ${btoa(`${formEncode(clientId)}:${formEncode(clientSecret)}`)}`;
    } else {
      form.set('client_id', clientId);
      form.set('client_secret', clientSecret);
    }
    const response = await fetch(this.#endpoint('/v1/oauth/token'), {
      method: 'POST',
      headers,
      body: form,
      signal,
    });
    if (response.status === 429 || response.status >= 500) {
      // Busy or failing for now (e.g. 503 temporarily_unavailable): not a refusal of the credentials.
      await response.body?.cancel();
      throw new TryLater(
        `token request ${response.status}`,
        retryAfterMs(response.headers.get('retry-after')),
      );
    }
    // A body that is not JSON (a proxy's page for a wrong URL) is a refusal all the same.
    const body = (await response.json().catch(() => ({}))) as { access_token?: string; error?: string };
    if (!response.ok || !body.access_token) {
      throw new Error(`live stream: token request ${response.status} ${body.error ?? ''}`.trimEnd());
    }
    return body.access_token;
  }

  /** `path` (with its query) under the base URL, keeping the base's own path. */
  #endpoint(path: string): URL {
    return new URL(this.#baseUrl + path);
  }

  #url(): URL {
    const url = this.#endpoint('/v1/live');
    const { types, deviceIds, capabilities, heartbeatSeconds } = this.options;
    if (types) url.searchParams.set('types', types.join(','));
    if (deviceIds) url.searchParams.set('deviceIds', deviceIds.join(','));
    if (capabilities) url.searchParams.set('capabilities', capabilities.join(','));
    if (heartbeatSeconds) url.searchParams.set('heartbeat', String(heartbeatSeconds));
    return url;
  }
}

/** An answer that asks to be tried again later, after `waitMs` when the server said how long. */
class TryLater extends Error {
  constructor(
    message: string,
    readonly waitMs: number | undefined,
  ) {
    super(message);
  }
}

/** application/x-www-form-urlencoded encoding of one value. */
function formEncode(text: string): string {
  return encodeURIComponent(text).replace(/%20/g, '+');
}

/** Retry-After as seconds or an HTTP date. */
function retryAfterMs(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
