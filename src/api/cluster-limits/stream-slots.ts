import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { StreamSlots, type StreamSlot, type StreamSlotPool } from '../live/slots.js';
import { loggableRedisError, withDeadline } from '../../infra/redis/connect.js';

// A client's open streams, across processes: a sorted set of slot ids scored by when their lease ends.
// Leases that ended belong to a process that died without giving them back; they are dropped first.
const TAKE_SLOT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
`;

const RENEW_SLOTS = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', now + tonumber(ARGV[1]), ARGV[i + 1])
  redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[1]))
end
return #KEYS
`;

const REDIS_ANSWER_MS = 250;

/**
 * Concurrent live streams per OAuth client across every API process, through Redis. Each slot is a lease
 * this process renews while its stream is open (every third of `leaseMs`) and removes when it closes; the
 * slots of a process that died free themselves when their leases end. When Redis does not answer, this
 * process's own count decides (the limit then holds per process) and a warning says so.
 */
export class SharedStreamSlots implements StreamSlotPool {
  readonly #local: StreamSlots;
  readonly #held = new Map<string, string>(); // slot id -> Redis key, for renewal
  readonly #renewal: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis,
    readonly limit: number,
    private readonly options: { leaseMs: number; logger: Logger },
  ) {
    this.#local = new StreamSlots(limit);
    this.#renewal = setInterval(() => void this.#renew(), Math.max(100, Math.floor(options.leaseMs / 3)));
    this.#renewal.unref();
  }

  async take(clientId: string): Promise<StreamSlot | undefined> {
    const key = `streams:${clientId}`;
    const id = randomUUID();
    let taken: unknown;
    try {
      taken = await withDeadline(
        this.redis.eval(TAKE_SLOT, 1, key, this.limit, id, this.options.leaseMs),
        REDIS_ANSWER_MS,
      );
    } catch (error) {
      this.options.logger.warn(
        { err: loggableRedisError(error) },
        'shared stream limit unavailable; counting per process',
      );
      return this.#local.takeNow(clientId);
    }
    if (Number(taken) !== 1) return undefined;
    this.#held.set(id, key);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#held.delete(id);
        // Not given back (Redis away): the lease frees the slot when it ends.
        this.redis.zrem(key, id).catch((error: unknown) => {
          this.options.logger.warn(
            { err: loggableRedisError(error) },
            'giving back a shared stream slot failed',
          );
        });
      },
    };
  }

  /** Stops renewing: the slots still held end with their leases. */
  close(): void {
    clearInterval(this.#renewal);
  }

  async #renew(): Promise<void> {
    if (this.#held.size === 0) return;
    const ids = [...this.#held.keys()];
    const keys = ids.map((id) => this.#held.get(id)!);
    try {
      await this.redis.eval(RENEW_SLOTS, keys.length, ...keys, this.options.leaseMs, ...ids);
    } catch (error) {
      this.options.logger.warn({ err: loggableRedisError(error) }, 'renewing shared stream slots failed');
    }
  }
}
