import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { connectRedis } from '../../infra/redis/connect.js';
import { SharedRequestBuckets } from './request-buckets.js';
import { SharedStreamSlots } from './stream-slots.js';

// How long a stream slot outlives a process that died holding it.
const STREAM_SLOT_LEASE_MS = 30_000;

/** The limits every API process of a deployment shares, through the cluster's Redis. */
export interface ClusterLimits {
  readonly requests: SharedRequestBuckets;
  readonly streams: SharedStreamSlots;
  close(): Promise<void>;
}

/** Opened when CLUSTER_REDIS_URL is set; otherwise each API process keeps its own limits. */
export async function openClusterLimits(
  config: Pick<
    Config,
    | 'CLUSTER_REDIS_URL'
    | 'CLUSTER_NAMESPACE'
    | 'RATE_LIMIT_PER_SECOND'
    | 'RATE_LIMIT_BURST'
    | 'LIVE_MAX_STREAMS_PER_CLIENT'
  >,
  logger: Logger,
  options: { streamLeaseMs?: number } = {},
): Promise<ClusterLimits | undefined> {
  if (!config.CLUSTER_REDIS_URL) return undefined;
  const redis = await connectRedis(
    config.CLUSTER_REDIS_URL,
    // A limit must answer now or not at all: no queue of commands while Redis is away.
    { role: 'api limits', keyPrefix: `${config.CLUSTER_NAMESPACE}:`, offlineQueue: false },
    logger,
  );
  const streams = new SharedStreamSlots(redis, config.LIVE_MAX_STREAMS_PER_CLIENT, {
    leaseMs: options.streamLeaseMs ?? STREAM_SLOT_LEASE_MS,
    logger,
  });
  return {
    requests: new SharedRequestBuckets(redis, {
      ratePerSecond: config.RATE_LIMIT_PER_SECOND,
      burst: config.RATE_LIMIT_BURST,
      logger,
    }),
    streams,
    async close() {
      streams.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
