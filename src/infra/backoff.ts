/** Exponential back-off: the first wait is `baseMs`, each failure doubles it, up to `capMs`. */
export interface Backoff {
  readonly baseMs: number;
  readonly capMs: number;
}

/** The longest wait after `failures` failures in a row (0 for the first retry): min(cap, base * 2^failures). */
export function backoffCeiling(failures: number, backoff: Backoff): number {
  return Math.min(backoff.capMs, backoff.baseMs * 2 ** failures);
}

/**
 * Full jitter: a random wait in [0, backoffCeiling), so many clients that failed at the same moment do not
 * retry at the same moment again.
 */
export function fullJitter(failures: number, backoff: Backoff): number {
  return Math.random() * backoffCeiling(failures, backoff);
}
