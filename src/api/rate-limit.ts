import { isIPv6 } from 'node:net';
import type { RequestHandler } from 'express';
import { HttpProblem } from './http-errors.js';

export interface RateLimitOptions {
  /** Sustained requests per second per client address. */
  readonly ratePerSecond: number;
  /** Requests a quiet client may send at once. */
  readonly burst: number;
  /** Milliseconds; injected so tests can freeze or move time. */
  readonly now?: () => number;
  /** Upper bound on addresses tracked at once; beyond it the least recently seen are forgotten. */
  readonly maxClients?: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * Token buckets per client address, in this process's memory. Behind several instances each keeps its own
 * buckets, so the limiter at the edge is the authoritative one; this one keeps a single instance safe.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep: number;

  constructor(private readonly options: RateLimitOptions) {
    this.lastSweep = this.now();
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** Takes one token for `key`: 0 when allowed, else the whole seconds until a token is due. */
  take(key: string): number {
    const now = this.now();
    this.sweep(now);
    const { ratePerSecond, burst } = this.options;
    const bucket = this.buckets.get(key) ?? { tokens: burst, updatedAt: now };
    bucket.tokens = Math.min(
      burst,
      bucket.tokens + (Math.max(0, now - bucket.updatedAt) * ratePerSecond) / 1000,
    );
    bucket.updatedAt = now;
    // Re-inserting keeps the map in least-recently-seen order for the size bound.
    this.buckets.delete(key);
    this.buckets.set(key, bucket);
    this.bound();
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerSecond));
  }

  get size(): number {
    return this.buckets.size;
  }

  /** A bucket idle long enough to have refilled is the same as no bucket: forget it. */
  private sweep(now: number) {
    const refillMs = (this.options.burst / this.options.ratePerSecond) * 1000;
    if (now - this.lastSweep < Math.max(1000, refillMs)) return;
    this.lastSweep = now;
    for (const [key, bucket] of this.buckets) {
      if (now - bucket.updatedAt >= refillMs) this.buckets.delete(key);
    }
  }

  private bound() {
    const max = this.options.maxClients ?? 100_000;
    for (const key of this.buckets.keys()) {
      if (this.buckets.size <= max) break;
      this.buckets.delete(key);
    }
  }
}

/**
 * The address a request is limited by. req.ip follows express's `trust proxy` (TRUST_PROXY_HOPS), so an
 * X-Forwarded-For header is only believed as far as configured. An IPv6 client usually holds a whole /64,
 * so IPv6 addresses are limited per /64.
 */
export function clientKey(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const address = ip.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`;
}

function ipv6Groups(address: string): string[] {
  const [head = '', tail] = address.split('::');
  const split = (part: string) =>
    part === '' ? [] : part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  const left = split(head);
  const right = tail === undefined ? [] : split(tail);
  const zeros = Array.from({ length: 8 - left.length - right.length }, () => '0');
  return [...left, ...zeros, ...right].map((g) => parseInt(g, 16).toString(16));
}

/** 429 `rate_limited` with Retry-After in seconds once a client address has spent its bucket. */
export function rateLimit(buckets: TokenBuckets): RequestHandler {
  return (req, _res, next) => {
    const wait = buckets.take(clientKey(req.ip));
    if (wait === 0) return next();
    next(new HttpProblem(429, 'rate_limited', {}, { 'Retry-After': String(wait) }));
  };
}
