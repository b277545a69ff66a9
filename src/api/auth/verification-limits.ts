import { HttpProblem } from '../http-errors.js';

/**
 * At most `running` costly secret checks (scrypt, for clients not yet migrated to keyed hashes) run at once,
 * and at most `waiting` wait for a slot; beyond that the request answers 503 at once instead of queueing CPU
 * work that anyone can send without credentials.
 */
export class VerificationSlots {
  private active = 0;
  private readonly queue: (() => void)[] = [];

  constructor(private readonly limits: { running: number; waiting: number }) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.active >= this.limits.running) {
      if (this.queue.length >= this.limits.waiting) {
        throw new HttpProblem(503, 'temporarily_unavailable', {}, { 'Retry-After': '1' });
      }
      await new Promise<void>((resolve) => this.queue.push(resolve));
    } else {
      this.active += 1;
    }
    try {
      return await work();
    } finally {
      const next = this.queue.shift();
      // The slot passes straight to the next waiter, so `active` only drops when nobody waits.
      if (next) next();
      else this.active -= 1;
    }
  }
}

/**
 * Failed client authentications per client id in a fixed window. Past `limit`, a failure answers 429 with
 * Retry-After instead of 401 (and a not-yet-migrated client's costly check is skipped), so guessing is slowed
 * down; the right secret still gets its token, so strangers who know a client id cannot lock it out.
 */
export class ClientFailures {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly options: { limit: number; windowMs: number; now: () => number; maxTracked?: number },
  ) {}

  /** Whole seconds until the client id's window ends when it is over the limit, else 0. */
  retryAfter(clientId: string): number {
    const now = this.options.now();
    const window = this.windows.get(clientId);
    if (!window || now - window.start >= this.options.windowMs || window.count < this.options.limit) return 0;
    return Math.max(1, Math.ceil((window.start + this.options.windowMs - now) / 1000));
  }

  record(clientId: string): void {
    const now = this.options.now();
    const current = this.windows.get(clientId);
    const window =
      current && now - current.start < this.options.windowMs ? current : { start: now, count: 0 };
    window.count += 1;
    this.windows.delete(clientId);
    this.windows.set(clientId, window);
    // Oldest first in insertion order: a flood of made-up ids forgets the oldest, never grows without bound.
    if (this.windows.size > (this.options.maxTracked ?? 10_000)) {
      this.windows.delete(this.windows.keys().next().value!);
    }
  }
}

export const tooManyFailures = (seconds: number) =>
  new HttpProblem(429, 'rate_limited', {}, { 'Retry-After': String(seconds) });
