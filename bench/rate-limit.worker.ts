import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import express, { type RequestHandler } from 'express';
import {
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  RLWrapperTimeouts,
  type RateLimiterLike,
} from 'rate-limiter-flexible';
import { openClusterLimits } from '../src/api/cluster-limits/index.js';
import { errorHandler, HttpProblem } from '../src/api/http-errors.js';
import { clientKey, rateLimit } from '../src/api/rate-limit.js';
import { createLogger } from '../src/infra/logger.js';
import { connectRedis } from '../src/infra/redis/connect.js';
import { TokenBuckets } from '../src/infra/token-buckets.js';
import { currentThreadCpuUs } from './cpu.js';

/**
 * The rate-limit benchmark's server, on its own thread so that its CPU is the limiter's and express's
 * alone, not the load generator's: an express app with `trust proxy` 1 (the client address is the last
 * X-Forwarded-For entry, as behind one proxy of ours), one limiter in front of a route answering a small
 * JSON body, and the service's own error mapping (429 `rate_limited` with Retry-After).
 *
 * Limiters: `none` (the baseline), `ours` (src/api/rate-limit.ts over TokenBuckets, or over Redis as
 * openClusterLimits wires it) and `flexible` (rate-limiter-flexible configured as close to ours as it
 * goes: a window of `burst` requests per `burst / rate` seconds, RateLimiterRedis with a RateLimiterMemory
 * insurance behind a 250 ms timeout, so that an unanswering Redis leaves each process limiting alone).
 */
export interface RateLimitServerInput {
  readonly limiter: 'none' | 'ours' | 'flexible';
  readonly store: 'memory' | 'redis';
  readonly redisUrl: string;
  readonly namespace: string;
  readonly ratePerSecond: number;
  readonly burst: number;
  /** rate-limiter-flexible's window, in whole seconds as its Redis store counts them. */
  readonly windowSeconds: number;
  readonly maxSamples: number;
}

const input = workerData as RateLimitServerInput;
const logger = createLogger('warn', process.stderr);
const REDIS_ANSWER_MS = 250;

const closers: (() => Promise<unknown>)[] = [];

async function limiter(): Promise<RequestHandler> {
  const { ratePerSecond, burst } = input;
  if (input.limiter === 'none') return (_req, _res, next) => next();
  if (input.limiter === 'ours') {
    if (input.store === 'memory') return rateLimit(new TokenBuckets({ ratePerSecond, burst }));
    const limits = await openClusterLimits(
      {
        CLUSTER_REDIS_URL: input.redisUrl,
        CLUSTER_NAMESPACE: input.namespace,
        RATE_LIMIT_PER_SECOND: ratePerSecond,
        RATE_LIMIT_BURST: burst,
        LIVE_MAX_STREAMS_PER_CLIENT: 10,
      },
      logger,
    );
    closers.push(() => limits!.close());
    return rateLimit(limits!.requests);
  }
  const window = { points: burst, duration: input.windowSeconds };
  if (input.store === 'memory') return flexibleRateLimit(new RateLimiterMemory(window));
  const redis = await connectRedis(
    input.redisUrl,
    { role: 'api limits', keyPrefix: `${input.namespace}:`, offlineQueue: false },
    logger,
  );
  closers.push(() => redis.quit());
  const shared = new RateLimiterRedis({
    ...window,
    storeClient: redis,
    keyPrefix: 'requests',
    insuranceLimiter: new RateLimiterMemory(window),
  });
  // The wrapper takes the insurance of the limiter it wraps: a timeout falls back to it too.
  return flexibleRateLimit(new RLWrapperTimeouts({ limiter: shared, timeoutMs: REDIS_ANSWER_MS }));
}

/** rate-limiter-flexible in front of a route, answering as ours does: 429 rate_limited with Retry-After. */
function flexibleRateLimit(limiter: RateLimiterLike): RequestHandler {
  return (req, _res, next) => {
    limiter.consume(clientKey(req.ip)).then(
      () => next(),
      (refusal: unknown) => {
        if (!(refusal instanceof RateLimiterRes)) return next(refusal);
        const wait = Math.max(1, Math.ceil(refusal.msBeforeNext / 1000));
        next(new HttpProblem(429, 'rate_limited', {}, { 'Retry-After': String(wait) }));
      },
    );
  };
}

// Nanoseconds from entering the limiter to its decision, for every request since `start`.
const decisions = new Float64Array(input.maxSamples);
let decided = 0;
let measuring = false;

const limit = await limiter();
const app = express();
app.disable('x-powered-by');
app.set('trust proxy', 1);
app.use((req, res, next) => {
  const t0 = process.hrtime.bigint();
  limit(req, res, (error?: unknown) => {
    if (measuring && decided < decisions.length) decisions[decided++] = Number(process.hrtime.bigint() - t0);
    next(error);
  });
});
app.get('/r', (_req, res) => {
  res.json({ ok: true });
});
app.use(errorHandler);

const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
let cpuAtStart = 0;
parentPort!.on('message', (message: { kind: string }) => {
  if (message.kind === 'start') {
    decided = 0;
    measuring = true;
    cpuAtStart = currentThreadCpuUs();
    parentPort!.postMessage({ kind: 'started' });
  } else if (message.kind === 'stop') {
    measuring = false;
    const cpuUs = currentThreadCpuUs() - cpuAtStart;
    const limiterNs = decisions.slice(0, decided);
    server.closeAllConnections();
    server.close();
    void Promise.allSettled(closers.map((close) => close())).then(() =>
      parentPort!.postMessage({ kind: 'stopped', cpuUs, limiterNs }, [limiterNs.buffer]),
    );
  }
});
parentPort!.postMessage({ kind: 'listening', port: (server.address() as AddressInfo).port });
