import { Redis } from 'ioredis';
import mqemitterRedis from 'mqemitter-redis';
import redisPersistence from 'aedes-persistence-redis';
import type { Logger } from 'pino';

export interface BrokerCluster {
  /** redis:// or rediss:// URL of the Redis that every broker node of the deployment shares. */
  readonly redisUrl: string;
  /** Prefixes this deployment's Redis keys and channels, so deployments (or test runs) can share a Redis. */
  readonly namespace: string;
  /** How long start-up waits for Redis before it fails; default 10 s. */
  readonly connectTimeoutMs?: number;
}

interface Message {
  readonly topic: string;
  readonly payload: Buffer | string;
}
type Listener = (message: Message, done: () => void) => void;

/** The emitter aedes routes every publish through; shared over Redis pub/sub between the nodes. */
export interface ClusterEmitter {
  on(topic: string, listener: Listener, done?: () => void): void;
  close(done: () => void): void;
  readonly state: NodeJS.EventEmitter;
}

/** What aedes shares between broker nodes: the router (takeovers, downlinks) and the sessions and wills. */
export interface ClusterBackplane {
  readonly mq: ClusterEmitter;
  readonly persistence: unknown;
  /** After aedes has closed (which closes the emitter): leaves the cluster and disconnects. */
  destroy(): Promise<void>;
}

type PrefixedEmitter = new (prefix: string, options: { pubConn: Redis; subConn: Redis }) => ClusterEmitter;
// The prefixing emitter is exported beside the default one but missing from the package's types.
const { MQEmitterRedisPrefix } = mqemitterRedis as unknown as { MQEmitterRedisPrefix: PrefixedEmitter };

// Lands in Redis key names and PSUBSCRIBE patterns: no glob characters, no topic separator.
const NAMESPACE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Connects the three Redis connections a clustered broker node needs (publish, subscribe, sessions), each
 * checked before aedes starts on them: a node whose Redis is unreachable refuses to start rather than
 * accepting agents it cannot route for.
 */
export async function openClusterBackplane(
  cluster: BrokerCluster,
  logger: Logger,
): Promise<ClusterBackplane> {
  if (!NAMESPACE.test(cluster.namespace)) {
    throw new RangeError(`broker cluster namespace must match ${NAMESPACE.source}: ${cluster.namespace}`);
  }
  const timeout = cluster.connectTimeoutMs ?? 10_000;
  const opened: Redis[] = [];
  const connect = async (role: string, keyPrefix?: string): Promise<Redis> => {
    const redis = new Redis(cluster.redisUrl, {
      lazyConnect: true,
      connectTimeout: timeout,
      ...(keyPrefix ? { keyPrefix } : {}),
    });
    opened.push(redis);
    // Without a listener a lost connection would throw; ioredis reconnects by itself meanwhile.
    redis.on('error', (error: Error) => logger.warn({ err: error, role }, 'broker cluster redis error'));
    await redis.connect();
    return redis;
  };
  try {
    const [pubConn, subConn, conn] = await Promise.all([
      connect('publish'),
      connect('subscribe'),
      connect('sessions', `${cluster.namespace}:`),
    ]);
    // A separator-terminated prefix keeps MQTT wildcards whole: `+` and `#` match per topic level.
    const mq = new MQEmitterRedisPrefix(`${cluster.namespace}/`, { pubConn, subConn });
    mq.state.on('error', (error: Error) => logger.warn({ err: error }, 'broker cluster emitter error'));
    const persistence = redisPersistence({ conn });
    let destroyed: Promise<void> | undefined;
    return {
      mq,
      persistence,
      destroy() {
        destroyed ??= persistence.destroy().catch((error: unknown) => {
          logger.warn({ err: error }, 'leaving the broker cluster failed');
          conn.disconnect();
        });
        return destroyed;
      },
    };
  } catch (error) {
    for (const redis of opened) redis.disconnect();
    throw new Error(`broker cluster: cannot reach Redis (${String((error as Error).message ?? error)})`, {
      cause: error,
    });
  }
}
