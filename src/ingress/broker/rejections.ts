import type { Logger } from 'pino';
import { LogThrottle } from '../../infra/log-throttle.js';

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

/**
 * Counts every rejection and logs at most one line per agent per window, so a misbehaving agent (or a
 * broken agent fleet) cannot flood the log. Infrastructure failures are throttled as one source, not per
 * agent: when the store is down every agent fails at once and one line a minute says so.
 */
export class Rejections {
  readonly #logger: Logger;
  readonly #count: (reason: RejectionReason, agentId: string | undefined) => void;
  readonly #throttle: LogThrottle;

  constructor(options: {
    logger: Logger;
    onRejected?: ((reason: RejectionReason, agentId: string | undefined) => void) | undefined;
    windowMs?: number;
    now?: () => number;
  }) {
    this.#logger = options.logger;
    this.#count = options.onRejected ?? (() => undefined);
    this.#throttle = new LogThrottle({ windowMs: options.windowMs ?? 60_000, now: options.now });
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
    const suppressed = this.#throttle.due(key);
    if (suppressed === undefined) return;
    const fields = { reason, agentId, detail, suppressedSinceLastLog: suppressed };
    if (INFRASTRUCTURE.has(reason)) this.#logger.error(fields, 'mqtt ingress failure');
    else this.#logger.warn(fields, 'mqtt client refused');
  }
}
