export interface TokenBucketOptions {
  /** Tokens added per second: the sustained rate. */
  readonly ratePerSecond: number;
  /** Tokens a bucket holds at most: what a quiet key may spend at once. */
  readonly burst: number;
  /** Milliseconds; injected so tests can freeze or move time. */
  readonly now?: () => number;
  /** Upper bound on keys tracked at once; beyond it the least recently seen are forgotten. */
  readonly maxKeys?: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * Token buckets per key, in this process's memory: per client address for the HTTP API, per agent for
 * readings. Behind several instances each keeps its own buckets.
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep: number;

  constructor(private readonly options: TokenBucketOptions) {
    this.lastSweep = this.now();
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** Takes one token for `key`: 0 when allowed, else the whole seconds until a token is due. */
  take(key: string): number {
    const bucket = this.refilled(key);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.options.ratePerSecond));
  }

  /**
   * Spends `cost` tokens for `key` whether or not it has them, going into debt: answers the milliseconds
   * until the debt is paid back (0 when the bucket covered the cost). Reservations queue up behind each
   * other, so the key's long-run rate stays at ratePerSecond however it is spread.
   */
  reserve(key: string, cost: number): number {
    const bucket = this.refilled(key);
    bucket.tokens -= cost;
    return bucket.tokens >= 0 ? 0 : Math.ceil((-bucket.tokens * 1000) / this.options.ratePerSecond);
  }

  /** Gives back what a reservation spent when the work it was for never happened. */
  refund(key: string, cost: number): void {
    const bucket = this.buckets.get(key);
    if (bucket) bucket.tokens = Math.min(this.options.burst, bucket.tokens + cost);
  }

  get size(): number {
    return this.buckets.size;
  }

  private refilled(key: string): Bucket {
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
    return bucket;
  }

  /** A bucket idle long enough to have refilled is the same as no bucket: forget it. */
  private sweep(now: number) {
    const { ratePerSecond, burst } = this.options;
    if (now - this.lastSweep < Math.max(1000, (burst / ratePerSecond) * 1000)) return;
    this.lastSweep = now;
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.updatedAt) * ratePerSecond) / 1000 >= burst)
        this.buckets.delete(key);
    }
  }

  private bound() {
    const max = this.options.maxKeys ?? 100_000;
    for (const key of this.buckets.keys()) {
      if (this.buckets.size <= max) break;
      this.buckets.delete(key);
    }
  }
}
