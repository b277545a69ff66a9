import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../infra/logger.js';
import { LogThrottle } from '../../infra/log-throttle.js';
import { TokenBuckets } from '../../infra/token-buckets.js';

export interface AgentQuotaOptions {
  /** What an agent may send per second, sustained. */
  readonly perSecond: number;
  /** What a quiet agent may send at once. */
  readonly burst: number;
  /** What the quota counts, for its log line: `readings`, `command acks`. */
  readonly counts: string;
  readonly logger: Logger;
  /** Counts each message held back. */
  readonly onOverQuota: () => void;
  readonly logWindowMs?: number;
}

export interface ReadingQuotaOptions extends Omit<AgentQuotaOptions, 'perSecond' | 'counts'> {
  /** READINGS_QUOTA_PER_SECOND: readings an agent may send per second, sustained. */
  readonly readingsPerSecond: number;
  /** READINGS_QUOTA_BURST: readings a quiet agent may send at once. */
  readonly burst: number;
}

/**
 * Per-agent quota on what agents publish: a token bucket per agent. Over it, a message waits before it is
 * handled, and its PUBACK with it (docs/mqtt.md §7). Nothing is acknowledged without being handled and
 * nothing is dropped: the agent's QoS 1 in-flight window fills up, aedes stops reading that connection
 * until its batch is answered, and the agent slows to the quota. Refusing and disconnecting instead would
 * send the agent into reconnect loops, each flapping its devices offline, for traffic that is only fast.
 *
 * Buckets run on the real clock, not the server clock stamped on readings (which tests speed up).
 */
export class AgentQuota {
  readonly #buckets: TokenBuckets;
  readonly #logs: LogThrottle;
  readonly #logger: Logger;
  readonly #onOverQuota: () => void;
  readonly #counts: string;

  constructor(options: AgentQuotaOptions) {
    this.#buckets = new TokenBuckets({ ratePerSecond: options.perSecond, burst: options.burst });
    this.#logs = new LogThrottle({ windowMs: options.logWindowMs ?? 60_000 });
    this.#logger = options.logger;
    this.#onOverQuota = options.onOverQuota;
    this.#counts = options.counts;
  }

  /**
   * Resolves when the agent may send `units` more; at once while it is within its quota. Rejects with an
   * AbortError, giving the units back, when `connection` ends first: the message can no longer be
   * acknowledged, and the agent sends it again.
   */
  async admit(agentId: string, units: number, connection?: AbortSignal): Promise<void> {
    const waitMs = this.#buckets.reserve(agentId, units);
    if (waitMs === 0) return;
    this.#onOverQuota();
    const held = this.#logs.due(agentId);
    if (held !== undefined) {
      this.#logger.warn(
        { agentId, waitMs, heldBackSinceLastLog: held },
        `agent over its ${this.#counts} quota: its PUBACKs are delayed (logged once a minute per agent)`,
      );
    }
    try {
      await sleep(waitMs, undefined, { signal: connection });
    } catch (error) {
      this.#buckets.refund(agentId, units);
      throw error;
    }
  }
}

/** The readings quota (READINGS_QUOTA_*), counted in readings: the readings in a message, valid or not. */
export class ReadingQuota extends AgentQuota {
  constructor({ readingsPerSecond, ...options }: ReadingQuotaOptions) {
    super({ ...options, perSecond: readingsPerSecond, counts: 'readings' });
  }
}
