import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { loggableRedisError, withDeadline } from '../../infra/redis/connect.js';
import { TokenBuckets } from '../../infra/token-buckets.js';
import type { RequestBuckets } from '../rate-limit.js';

// One token bucket per key in a Redis hash, on Redis's clock so every API process refills it alike. The
// key expires once the bucket would be full again: an idle client costs nothing.
const TAKE_TOKEN = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(bucket[1]) or burst
local at = tonumber(bucket[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.max(1, math.ceil((1 - tokens) / rate))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return wait
`;

// A limiter that waits on an unreachable Redis would hold every request: past this, this process decides.
const REDIS_ANSWER_MS = 250;
const WARN_EVERY_MS = 10_000;

/**
 * The per-address request limit shared by every API process through Redis, so N processes behind a load
 * balancer allow what one does. When Redis does not answer in time this process's own buckets decide
 * (the limit then holds per process, as without a cluster) and a warning says so, at most every 10 s.
 */
export class SharedRequestBuckets implements RequestBuckets {
  readonly #local: TokenBuckets;
  #warnedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly redis: Redis,
    private readonly options: { ratePerSecond: number; burst: number; logger: Logger },
  ) {
    this.#local = new TokenBuckets({ ratePerSecond: options.ratePerSecond, burst: options.burst });
  }

  async take(key: string): Promise<number> {
    try {
      const wait = await withDeadline(
        this.redis.eval(TAKE_TOKEN, 1, `requests:${key}`, this.options.ratePerSecond, this.options.burst),
        REDIS_ANSWER_MS,
      );
      return Number(wait);
    } catch (error) {
      if (Date.now() - this.#warnedAt >= WARN_EVERY_MS) {
        this.#warnedAt = Date.now();
        this.options.logger.warn(
          { err: loggableRedisError(error) },
          'shared rate limit unavailable; limiting per process',
        );
      }
      return this.#local.take(key);
    }
  }
}
