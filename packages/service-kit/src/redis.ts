import { Redis } from 'ioredis';
import type { ReadinessCheck } from './health.ts';
import type { Logger } from './logger.ts';
import { processHost } from './process-host.ts';

export type { Redis } from 'ioredis';

export interface RedisOptions {
  /** `redis://[:password@]host:port[/db]` */
  url: string;
  /** Prepended to every key, so services and environments sharing a Redis never collide. */
  keyPrefix: string;
  logger: Logger;
  /** Longest time one command may take before it fails. */
  commandTimeoutMs?: number;
}

/**
 * An ioredis client that fails fast rather than queueing: no offline queue, one retry per command,
 * a command timeout and a capped reconnect delay. While Redis is down, commands reject at once and
 * readiness says so; the client reconnects by itself. Connection changes are logged once each.
 */
export function createRedis(options: RedisOptions): Redis {
  // In the embedded local stack (packages/embedded) every deployable of the process shares one stand-in.
  const shared = processHost().redis;
  if (shared !== undefined) return shared(options);
  const redis = new Redis(options.url, {
    keyPrefix: options.keyPrefix,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: options.commandTimeoutMs ?? 500,
    connectTimeout: 1000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  });
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    options.logger.warn({ reason: err.message }, 'redis unreachable; reconnecting');
  });
  redis.on('ready', () => {
    if (down) options.logger.info('redis reconnected');
    down = false;
  });
  return redis;
}

/** Closes the client politely, or at once when it is not connected. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') {
    await redis.quit().catch(() => redis.disconnect());
  } else {
    redis.disconnect();
  }
}

/** Readiness: the client is connected and Redis answers PING. */
export function redisCheck(redis: Redis): ReadinessCheck {
  return {
    name: 'redis',
    check: async () => {
      if (redis.status !== 'ready') throw new Error(`client is ${redis.status}`);
      await redis.ping();
    },
  };
}

/** Resolves when the client is ready, or after `timeoutMs` (false): start-up goes on either way. */
export function waitForRedis(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    redis.once('ready', onReady);
  });
}
