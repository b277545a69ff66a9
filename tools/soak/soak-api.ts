import { setTimeout as sleep } from 'node:timers/promises';
import { requestToken } from './oauth-token.js';

/** An answer the API gave (not a refused connection, a 401, a 429 or a 5xx, which are tried again). */
export interface ApiAnswer {
  readonly status: number;
  readonly body: unknown;
  /** Requests it took: more than one when the api role was down or restarting. */
  readonly attempts: number;
}

/** How long one request may take before it counts as failed (a role killed mid-request may never answer). */
const REQUEST_TIMEOUT_MS = 15_000;
/** Between tries while the api role is away, and the most a Retry-After is waited. */
const RETRY_PAUSE_MS = 250;
const MAX_RETRY_AFTER_MS = 5000;

/**
 * The soak's HTTP client of the api role, with one OAuth client's credentials: it keeps one access token
 * (from the client_credentials endpoint, which is on the api role too) and gets a new one when it is refused,
 * and it tries a request again, unchanged, for as long as the api role is down, restarting or overloaded.
 * Everything stops when `signal` aborts.
 */
export class SoakApi {
  readonly baseUrl: string;
  readonly #credentials: { clientId: string; clientSecret: string };
  readonly #signal: AbortSignal;
  #token: string | undefined;
  #pending: Promise<string> | undefined;

  constructor(baseUrl: string, credentials: { clientId: string; clientSecret: string }, signal: AbortSignal) {
    this.baseUrl = baseUrl;
    this.#credentials = credentials;
    this.#signal = signal;
  }

  get signal(): AbortSignal {
    return this.#signal;
  }

  /**
   * The current access token, or a new one once the token endpoint answers (one request at a time for all
   * callers). Throws when `signal` aborts first.
   */
  async token(signal = this.#signal): Promise<string> {
    if (this.#token !== undefined) return this.#token;
    signal.throwIfAborted();
    this.#pending ??= this.#obtain().finally(() => (this.#pending = undefined));
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([this.#pending, aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort!);
    }
  }

  /** Forgets `refused` (answered 401, or the stream ended for its expiry) unless it was replaced already. */
  renew(refused: string): void {
    if (this.#token === refused) this.#token = undefined;
  }

  /** Waits `ms` (default: the pause between tries), or less when `signal` (default: the soak's) aborts. */
  async pause(ms = RETRY_PAUSE_MS, signal = this.#signal): Promise<void> {
    await sleep(ms, undefined, { signal }).catch(() => {});
  }

  /**
   * `method path` with a JSON body, sent again unchanged (same headers, so the same Idempotency-Key) until
   * the API answers it. Throws only when the soak stops first, or `options.signal` aborts.
   */
  async untilAnswered(
    method: string,
    path: string,
    body: unknown,
    options: { headers?: Record<string, string>; signal?: AbortSignal; onAttempt?: () => void } = {},
  ): Promise<ApiAnswer> {
    const signal = options.signal ? AbortSignal.any([this.#signal, options.signal]) : this.#signal;
    for (let attempts = 1; ; attempts++) {
      const token = await this.token(signal);
      options.onAttempt?.();
      let response: Response;
      try {
        response = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers: {
            Authorization: `Bearer ${token}`,
            'Content-Type': 'application/json',
            ...options.headers,
          },
          body: JSON.stringify(body),
          signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
        });
      } catch {
        await this.pause(undefined, signal);
        continue;
      }
      const status = response.status;
      const text = await response.text().catch(() => undefined);
      if (text === undefined) {
        // The connection broke while the answer came: the request may or may not have been carried out.
        await this.pause(undefined, signal);
        continue;
      }
      if (status === 401) {
        this.renew(token);
        continue;
      }
      if (status === 429 || status >= 500) {
        await this.pause(retryAfterMs(response.headers.get('retry-after')), signal);
        continue;
      }
      return { status, body: parseJson(text), attempts };
    }
  }

  async #obtain(): Promise<string> {
    for (;;) {
      this.#signal.throwIfAborted();
      try {
        const token = await requestToken(this.baseUrl, this.#credentials, 'post', undefined);
        this.#token = token;
        return token;
      } catch {
        // The api role is down or still starting; its token endpoint is back when it is.
        await this.pause();
      }
    }
  }
}

/** Retry-After in seconds, capped: the soak only wants to stay polite, not to sit out long waits. */
export function retryAfterMs(value: string | null): number | undefined {
  if (value === null || !/^\d+$/.test(value)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Number(value) * 1000);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
