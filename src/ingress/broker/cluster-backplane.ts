import type { Redis } from 'ioredis';
import mqemitterRedis from 'mqemitter-redis';
import redisPersistence from 'aedes-persistence-redis';
import type { Logger } from 'pino';
import {
  CLUSTER_NAMESPACE,
  connectRedis,
  loggableRedisError,
  withDeadline,
} from '../../infra/redis/connect.js';

export interface BrokerCluster {
  /** redis:// or rediss:// URL of the Redis that every broker node of the deployment shares. */
  readonly redisUrl: string;
  /** Prefixes this deployment's Redis keys and channels, so deployments (or test runs) can share a Redis. */
  readonly namespace: string;
  /** How long start-up waits for Redis before it fails; default 10 s. */
  readonly connectTimeoutMs?: number;
  /** How often this node says it is alive; a node silent for three of these has its wills published. */
  readonly heartbeatMs?: number;
}

interface Message {
  readonly topic: string;
  readonly payload: Buffer | string;
}
type Listener = (message: Message, done: () => void) => void;

/** The emitter aedes routes every publish through; shared over Redis pub/sub between the nodes. */
interface ClusterEmitter {
  on(topic: string, listener: Listener, done?: () => void): void;
  close(done: () => void): void;
  readonly state: NodeJS.EventEmitter;
}

/** What aedes shares between broker nodes: the router (takeovers, downlinks) and the sessions and wills. */
export interface ClusterBackplane {
  readonly mq: ClusterEmitter;
  readonly persistence: unknown;
  /** Closes the emitter (if aedes has not), leaves the cluster and disconnects, each within a deadline. */
  destroy(): Promise<void>;
}

type PrefixedEmitter = new (prefix: string, options: { pubConn: Redis; subConn: Redis }) => ClusterEmitter;
// The prefixing emitter is exported beside the default one but missing from the package's types.
const { MQEmitterRedisPrefix } = mqemitterRedis as unknown as { MQEmitterRedisPrefix: PrefixedEmitter };

/**
 * Connects the three Redis connections a clustered broker node needs (publish, subscribe, sessions), each
 * checked before aedes starts on them: a node whose Redis is unreachable refuses to start rather than
 * accepting agents it cannot route for.
 */
export async function openClusterBackplane(
  cluster: BrokerCluster,
  logger: Logger,
): Promise<ClusterBackplane> {
  if (!CLUSTER_NAMESPACE.test(cluster.namespace)) {
    throw new RangeError(`cluster namespace must match ${CLUSTER_NAMESPACE.source}: ${cluster.namespace}`);
  }
  const connect = (role: string, keyPrefix?: string) =>
    connectRedis(cluster.redisUrl, { role, keyPrefix, timeoutMs: cluster.connectTimeoutMs }, logger);
  const connections = await Promise.allSettled([
    connect('broker publish'),
    connect('broker subscribe'),
    connect('broker sessions', `${cluster.namespace}:`),
  ]);
  const failed = connections.find((c) => c.status === 'rejected');
  if (failed) {
    for (const c of connections) if (c.status === 'fulfilled') c.value.disconnect();
    throw failed.reason;
  }
  const [pubConn, subConn, conn] = connections.map((c) => (c as PromiseFulfilledResult<Redis>).value) as [
    Redis,
    Redis,
    Redis,
  ];
  // A separator-terminated prefix keeps MQTT wildcards whole: `+` and `#` match per topic level.
  const mq = new MQEmitterRedisPrefix(`${cluster.namespace}/`, { pubConn, subConn });
  mq.state.on('error', (error: unknown) =>
    logger.warn({ err: loggableRedisError(error) }, 'broker cluster emitter error'),
  );
  // aedes closes the emitter on its way out; the emitter waits for Redis to confirm, which an unreachable
  // Redis never does. Past the deadline the connections are dropped and shutdown goes on.
  const closeEmitter = mq.close.bind(mq);
  let emitterClosed: Promise<void> | undefined;
  mq.close = (done: () => void) => {
    emitterClosed ??= new Promise<void>((resolve) => {
      const deadline = setTimeout(() => {
        pubConn.disconnect();
        subConn.disconnect();
        resolve();
      }, EMITTER_CLOSE_MS);
      closeEmitter(() => {
        clearTimeout(deadline);
        resolve();
      });
    });
    void emitterClosed.then(done);
  };
  const persistence = redisPersistence({ conn });
  let destroyed: Promise<void> | undefined;
  return {
    mq,
    persistence,
    destroy() {
      destroyed ??= (async () => {
        await Promise.all([
          new Promise<void>((resolve) => mq.close(resolve)),
          withDeadline(persistence.destroy(), EMITTER_CLOSE_MS).catch((error: unknown) => {
            logger.warn({ err: loggableRedisError(error) }, 'leaving the broker cluster failed');
          }),
        ]);
        conn.disconnect();
      })();
      return destroyed;
    },
  };
}

const EMITTER_CLOSE_MS = 1000;
