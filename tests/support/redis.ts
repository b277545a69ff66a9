import { once } from 'node:events';
import net from 'node:net';
import { Redis } from 'ioredis';
import { RUN_ID } from './run-directory.js';

/** The Redis the cluster cases use: REDIS_URL, else the one CI runs on 127.0.0.1:6379. */
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

let count = 0;

/** A namespace of this run's own: runs side by side on one Redis never see each other's keys. */
export function testNamespace(purpose: string): string {
  return `dctest_${RUN_ID}_${purpose}_${++count}`;
}

/** Redis answers within a second, or the cluster cases cannot run here (they say so and stay pending). */
export async function redisReachable(): Promise<boolean> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** Skips the suite, naming why, when there is no Redis (the host only: the URL may hold a password). */
export async function requireRedis(context: Mocha.Context): Promise<void> {
  if (await redisReachable()) return;
  console.log(`      (pending: no Redis at ${new URL(REDIS_URL).host}; set REDIS_URL to run these cases)`);
  context.skip();
}

/** Deletes every key of a namespace. */
export async function dropNamespace(namespace: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${namespace}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}

/**
 * A TCP proxy in front of the test Redis that a test can cut: the fault is real sockets closing and new
 * connections refused, not a mocked client.
 */
export async function redisProxy(): Promise<{ url: string; cut(): void; restore(): void; close(): void }> {
  const target = new URL(REDIS_URL);
  const sockets = new Set<net.Socket>();
  let accepting = true;
  const proxy = net.createServer((client) => {
    if (!accepting) return client.destroy();
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => sockets.delete(socket));
    }
    client.pipe(upstream).pipe(client);
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  const { port } = proxy.address() as net.AddressInfo;
  const url = new URL(REDIS_URL);
  url.host = `127.0.0.1:${port}`;
  const cut = () => {
    accepting = false;
    for (const socket of sockets) socket.destroy();
  };
  return {
    url: url.toString(),
    cut,
    restore: () => {
      accepting = true;
    },
    close: () => {
      cut();
      proxy.close();
    },
  };
}
