import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** Names this deployment's Redis keys and channels; it lands in key names and PSUBSCRIBE patterns. */
export const CLUSTER_NAMESPACE = /^[A-Za-z0-9_-]{1,64}$/;

class RedisUnreachableError extends Error {}

/**
 * A Redis error as it may be logged. ioredis attaches the failed command to its errors, and for AUTH that
 * is the user and the password: only the name, the message and the code leave this function.
 */
export function loggableRedisError(error: unknown): { name: string; message: string; code?: string } {
  const {
    name = 'Error',
    message = String(error),
    code,
  } = (error ?? {}) as {
    name?: string;
    message?: string;
    code?: unknown;
  };
  return typeof code === 'string' ? { name, message, code } : { name, message };
}

/**
 * One Redis connection, connected before it is handed out: a process that depends on Redis for something
 * shared refuses to start without it rather than start half-working. Afterwards ioredis reconnects by
 * itself; errors are logged (never the URL or a command's arguments, which may carry a password).
 */
export async function connectRedis(
  url: string,
  options: { role: string; keyPrefix?: string; timeoutMs?: number; offlineQueue?: boolean },
  logger: Logger,
): Promise<Redis> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: options.timeoutMs ?? 10_000,
    enableOfflineQueue: options.offlineQueue ?? true,
    ...(options.keyPrefix ? { keyPrefix: options.keyPrefix } : {}),
  });
  // The first error says why (a refused password); the connect attempt itself only says it closed.
  let firstError: string | undefined;
  redis.on('error', (error: unknown) => {
    firstError ??= loggableRedisError(error).message;
    logger.warn({ err: loggableRedisError(error), role: options.role }, 'redis error');
  });
  try {
    await redis.connect();
    return redis;
  } catch (error) {
    redis.disconnect();
    const reason = firstError ?? loggableRedisError(error).message;
    throw new RedisUnreachableError(`cannot reach Redis for ${options.role}: ${reason}`);
  }
}

/** `work`, or a rejection once Redis has not answered within `ms`: a wait on Redis never holds the caller. */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from Redis within ${ms} ms`)), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
