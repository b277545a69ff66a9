import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { dropNamespace, REDIS_URL, redisReachable } from '../tests/support/redis.js';
import { round } from './cpu.js';
import { reply } from './ingest.bench.js';
import type { RateLimitServerInput } from './rate-limit.worker.js';
import { benchWorker, machine, percentiles, report } from './support.js';

/**
 * The request rate limit side by side: our token bucket (src/api/rate-limit.ts, in memory and through
 * Redis) against rate-limiter-flexible configured as close as it goes (docs/decisions/0040), and no limiter
 * as the baseline. Each runs in a fresh server thread (rate-limit.worker.ts) under one loopback load from
 * this thread: BENCH_RATELIMIT_CLIENTS concurrent keep-alive clients sending as fast as they are answered,
 * spread over BENCH_RATELIMIT_ADDRESSES client addresses (X-Forwarded-For behind `trust proxy` 1), until
 * BENCH_RATELIMIT_REQUESTS have been answered or BENCH_RATELIMIT_SECONDS have passed; meanwhile as many
 * paced addresses send at two thirds of the rate, which no limiter may refuse.
 *
 * One JSON line per limiter and store: requests/s, client round trip p50/p99 (and what it adds to the
 * baseline's), the limiter's own time to decide p50/p99, the server thread's CPU per request (and Redis's,
 * from INFO cpu), and correctness: requests passed against what the configured rate and burst allow each
 * address over its span (burst + rate × seconds), the most one address passed in any second (the bucket
 * allows burst + rate), paced requests refused, and the Retry-After values answered.
 * BENCH_RATELIMIT_LIMITERS (default `none,ours,flexible`) sets which limiters run and in which order, so
 * runs can alternate; BENCH_RATELIMIT_STORES (default `memory,redis`) the stores. Redis is the tests' one
 * (REDIS_URL, else 127.0.0.1:6379); its figures are skipped when it does not answer. Everything runs on
 * loopback.
 */
const REQUESTS = Number(process.env.BENCH_RATELIMIT_REQUESTS ?? 30_000);
const SECONDS = Number(process.env.BENCH_RATELIMIT_SECONDS ?? 15);
const CLIENTS = Number(process.env.BENCH_RATELIMIT_CLIENTS ?? 32);
const ADDRESSES = Number(process.env.BENCH_RATELIMIT_ADDRESSES ?? 16);
const RATE = Number(process.env.RATE_LIMIT_PER_SECOND ?? 30);
const BURST = Number(process.env.RATE_LIMIT_BURST ?? 60);
const LIMITERS = (process.env.BENCH_RATELIMIT_LIMITERS ?? 'none,ours,flexible').split(',');
const STORES = (process.env.BENCH_RATELIMIT_STORES ?? 'memory,redis').split(',');
const WARM_UP = 2000;
// Paced addresses send one request every 1.5 tokens' time: two thirds of the rate, never over it.
const PACE_MS = 1500 / RATE;

type Limiter = RateLimitServerInput['limiter'];
type Store = RateLimitServerInput['store'];

export async function rateLimitBenchmarks(): Promise<void> {
  for (const limiter of LIMITERS) {
    if (!['none', 'ours', 'flexible'].includes(limiter)) throw new Error(`unknown limiter ${limiter}`);
  }
  const redis = (await redisReachable()) ? new Redis(REDIS_URL) : undefined;
  const context = {
    machine: machine(),
    ratePerSecond: RATE,
    burst: BURST,
    clients: CLIENTS,
    addresses: ADDRESSES,
  };
  try {
    const baseline = new Map<Store, { p50Ms: number | null; p99Ms: number | null }>();
    for (const store of STORES as Store[]) {
      if (store === 'redis' && !redis) {
        report({ figure: 'ratelimit.redis', skipped: 'no Redis answers at REDIS_URL', ...context });
        continue;
      }
      for (const limiter of LIMITERS as Limiter[]) {
        // The baseline has no store: it is measured once, with the first store, and compared with both.
        if (limiter === 'none' && baseline.size > 0) continue;
        const figure = await measure(limiter, store, redis);
        const base = baseline.get(store) ?? baseline.values().next().value;
        if (limiter === 'none') baseline.set(store, figure.client);
        report({
          figure: limiter === 'none' ? 'ratelimit.none' : `ratelimit.${store}.${limiter}`,
          ...figure.numbers,
          ...figure.client,
          addedP50Ms: base && limiter !== 'none' ? difference(figure.client.p50Ms, base.p50Ms) : null,
          addedP99Ms: base && limiter !== 'none' ? difference(figure.client.p99Ms, base.p99Ms) : null,
          ...context,
        });
      }
    }
  } finally {
    redis?.disconnect();
  }
}

async function measure(limiter: Limiter, store: Store, redis: Redis | undefined) {
  const namespace = `bench-ratelimit-${randomBytes(4).toString('hex')}`;
  const input: RateLimitServerInput = {
    limiter,
    store,
    redisUrl: REDIS_URL,
    namespace,
    ratePerSecond: RATE,
    burst: BURST,
    windowSeconds: Math.max(1, Math.round(BURST / RATE)),
    maxSamples: REQUESTS + 100_000,
  };
  const server = benchWorker('./rate-limit.worker.ts', input);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS + ADDRESSES });
  try {
    const { port } = (await reply(server, 'listening')) as { port: number };
    const send = (address: string) => request(agent, port, address);
    // Warm-up from addresses of its own, so the measured ones start with full buckets.
    await load(send, WARM_UP, Date.now() + 10_000, (i) => `203.0.113.${i % 200}`);

    const redisCpuBefore = redis ? await redisCpuUs(redis) : 0;
    server.postMessage({ kind: 'start' });
    await reply(server, 'started');
    const paced = pacedLoad(send);
    const startedAt = performance.now();
    const run = await load(send, REQUESTS, Date.now() + SECONDS * 1000, (i) => `198.51.100.${i % ADDRESSES}`);
    const seconds = (performance.now() - startedAt) / 1000;
    const pacing = await paced.stop();
    server.postMessage({ kind: 'stop' });
    const { cpuUs, limiterNs } = (await reply(server, 'stopped')) as {
      cpuUs: number;
      limiterNs: Float64Array;
    };
    const redisCpu = store === 'redis' && redis ? (await redisCpuUs(redis)) - redisCpuBefore : null;
    if (store === 'redis') await dropNamespace(namespace);

    const answered = run.latencies.length + pacing.sent;
    const limiterUs = percentiles([...limiterNs].map((ns) => ns / 1000));
    const { p50Ms, p99Ms } = percentiles(run.latencies);
    return {
      client: { p50Ms, p99Ms },
      numbers: {
        requests: run.latencies.length,
        seconds: round(seconds, 2),
        requestsPerSecond: Math.round(run.latencies.length / seconds),
        limiterP50Us: limiterUs.p50Ms,
        limiterP99Us: limiterUs.p99Ms,
        // The server thread (express, the limiter, its Redis client) per request answered, paced ones included.
        cpuMicrosecondsPerRequest: round(cpuUs / answered, 1),
        redisCpuMicrosecondsPerRequest: redisCpu === null ? null : round(redisCpu / answered, 1),
        ...correctness(run.passed, run.firstSent, run.lastAnswered),
        pacedSent: pacing.sent,
        pacedRefused: pacing.refused,
        retryAfter: Object.fromEntries(run.retryAfter),
        windowSeconds: limiter === 'flexible' ? input.windowSeconds : null,
      },
    };
  } finally {
    agent.destroy();
    await server.terminate();
  }
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
}

function request(agent: http.Agent, port: number, address: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: '/r', agent, headers: { 'X-Forwarded-For': address } },
      (res) => {
        res.resume();
        res.once('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'] as string | undefined,
          }),
        );
        res.once('error', reject);
      },
    );
    req.once('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
  });
}

/** CLIENTS loops sending one request after another until `count` are answered or `deadline` passes. */
async function load(
  send: (address: string) => Promise<Answer>,
  count: number,
  deadline: number,
  addressOf: (client: number) => string,
) {
  const latencies: number[] = [];
  const passed = new Map<string, number[]>(); // address -> when each passed request was answered (ms)
  const firstSent = new Map<string, number>();
  const lastAnswered = new Map<string, number>();
  const retryAfter = new Map<string, number>();
  let issued = 0;
  const client = async (c: number) => {
    const address = addressOf(c);
    while (issued < count && Date.now() < deadline) {
      issued++;
      const t0 = performance.now();
      if (!firstSent.has(address)) firstSent.set(address, t0);
      const answer = await send(address);
      const t1 = performance.now();
      latencies.push(t1 - t0);
      lastAnswered.set(address, t1);
      if (answer.status === 200) {
        const times = passed.get(address) ?? [];
        times.push(t1);
        passed.set(address, times);
      } else if (answer.status === 429) {
        const value = answer.retryAfter ?? 'none';
        retryAfter.set(value, (retryAfter.get(value) ?? 0) + 1);
      } else throw new Error(`unexpected HTTP ${answer.status}`);
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  return { latencies, passed, firstSent, lastAnswered, retryAfter };
}

/** ADDRESSES paced addresses, each sending one request every PACE_MS until stopped. */
function pacedLoad(send: (address: string) => Promise<Answer>) {
  let stopped = false;
  let sent = 0;
  let refused = 0;
  const loops = Array.from({ length: ADDRESSES }, async (_, a) => {
    const address = `192.0.2.${a}`;
    let next = performance.now();
    while (!stopped) {
      const answer = await send(address);
      sent++;
      if (answer.status !== 200) refused++;
      next += PACE_MS;
      await sleep(Math.max(0, next - performance.now()));
    }
  });
  return {
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return { sent, refused };
    },
  };
}

/**
 * What passed against what a token bucket of RATE and BURST allows: each address at most
 * BURST + RATE × (its last answer − its first request), and in any one second at most BURST + RATE.
 */
function correctness(
  passed: Map<string, number[]>,
  firstSent: Map<string, number>,
  lastAnswered: Map<string, number>,
) {
  let total = 0;
  let allowed = 0;
  let addressesOverAllowed = 0;
  let mostInOneSecond = 0;
  for (const [address, first] of firstSent) {
    const times = passed.get(address) ?? [];
    const mayPass = BURST + (RATE * (lastAnswered.get(address)! - first)) / 1000;
    total += times.length;
    allowed += mayPass;
    if (times.length > mayPass) addressesOverAllowed++;
    for (let i = 0, j = 0; i < times.length; i++) {
      while (times[i]! - times[j]! >= 1000) j++;
      mostInOneSecond = Math.max(mostInOneSecond, i - j + 1);
    }
  }
  return {
    passed: total,
    allowed: Math.floor(allowed),
    passedShareOfAllowed: round(total / allowed, 3),
    addressesOverAllowed,
    mostPassedInOneSecond: mostInOneSecond,
    allowedInOneSecond: BURST + RATE,
  };
}

/** Redis's own CPU (every client's: run on a quiet Redis), from INFO cpu. */
async function redisCpuUs(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_sys') + field('used_cpu_user')) * 1e6;
}

function difference(a: number | null, b: number | null): number | null {
  return a === null || b === null ? null : round(a - b, 2);
}
