import type { Logger } from 'pino';

export type RejectionReason =
  /** TLS handshake failed: no client certificate, another CA, expired, wrong key usage. */
  | 'tls_handshake'
  /** Verified certificate that does not carry an agent identity (e.g. the broker's own). */
  | 'certificate_invalid'
  | 'client_id_mismatch'
  | 'unknown_agent'
  | 'revoked_agent'
  /** The agent's certificate expired while it was connected. */
  | 'certificate_expired'
  | 'will_refused'
  | 'publish_denied'
  | 'subscribe_denied'
  /** The uplink handler threw RejectedMessage: acknowledged and dropped. */
  | 'payload_rejected'
  | 'packet_too_large'
  /** Infrastructure, not the agent: the directory could not be read. */
  | 'directory_unavailable'
  /** Infrastructure, not the agent: the uplink handler failed; the message is not acknowledged. */
  | 'uplink_failed';

const INFRASTRUCTURE: ReadonlySet<RejectionReason> = new Set(['directory_unavailable', 'uplink_failed']);
const MAX_TRACKED = 10_000;

/**
 * Counts every rejection and logs at most one line per agent per window, so a misbehaving agent (or a
 * broken agent fleet) cannot flood the log. Infrastructure failures are throttled as one source, not per
 * agent: when the store is down every agent fails at once and one line a minute says so.
 */
export class Rejections {
  readonly #logger: Logger;
  readonly #count: (reason: RejectionReason, agentId: string | undefined) => void;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #lastLogged = new Map<string, { at: number; suppressed: number }>();

  constructor(options: {
    logger: Logger;
    onRejected?: ((reason: RejectionReason, agentId: string | undefined) => void) | undefined;
    windowMs?: number;
    now?: () => number;
  }) {
    this.#logger = options.logger;
    this.#count = options.onRejected ?? (() => undefined);
    this.#windowMs = options.windowMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  report(reason: RejectionReason, agentId: string | undefined, detail: string): void {
    try {
      this.#count(reason, agentId);
    } catch (error) {
      this.#logger.error({ err: error }, 'rejection counter failed');
    }
    const key = INFRASTRUCTURE.has(reason)
      ? `infrastructure:${reason}`
      : `agent:${agentId ?? '(unidentified)'}`;
    const now = this.#now();
    const last = this.#lastLogged.get(key);
    if (last && now - last.at < this.#windowMs) {
      last.suppressed += 1;
      return;
    }
    this.#prune(now);
    this.#lastLogged.set(key, { at: now, suppressed: 0 });
    const fields = { reason, agentId, detail, suppressedSinceLastLog: last?.suppressed ?? 0 };
    if (INFRASTRUCTURE.has(reason)) this.#logger.error(fields, 'mqtt ingress failure');
    else this.#logger.warn(fields, 'mqtt client refused');
  }

  #prune(now: number): void {
    if (this.#lastLogged.size < MAX_TRACKED) return;
    for (const [key, entry] of this.#lastLogged) {
      if (now - entry.at >= this.#windowMs) this.#lastLogged.delete(key);
    }
  }
}
