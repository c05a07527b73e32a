import { ServiceUnavailableError, TooManyRequestsError } from '@platform/errors';
import { type Redis, requestOrigin } from '@platform/service-kit';
import type { Request } from 'express';

/** Who is calling, as far as the platform can tell. */
export interface Caller {
  /** The signing key id the gateway verified and vouched for; absent when the service is called directly. */
  clientKeyId: string | undefined;
  /** The source address: the gateway's X-Forwarded-For under its assertion, else the socket peer. */
  address: string;
}

/**
 * Counts events per caller (per client key and per source address) in fixed windows: failed logins per
 * minute (CONTRACT.md part 4), password reset requests per hour.
 */
export interface CallerThrottle {
  /** Throws 429 with Retry-After when the caller used up its allowance for this window. */
  assertAllowed(caller: Caller): Promise<void>;
  /** Counts one event for the caller. */
  record(caller: Caller): Promise<void>;
  /**
   * Counts one event and throws 429 when that passes the allowance: count first, so N concurrent
   * requests cannot all pass the check before any of them is counted.
   */
  consume(caller: Caller): Promise<void>;
}

export interface CallerThrottleOptions {
  /** Names the counters in Redis. */
  name: string;
  /** Events allowed per window, per client key and per address. */
  limit: number;
  windowS: number;
  /** The 429 message. */
  message: string;
  /** The 503 message when Redis cannot count. */
  unavailableMessage: string;
}

/**
 * The caller of a request: the client key and source address the gateway vouched for (CONTRACT.md
 * part 10), or the socket peer and no client key, so a direct caller cannot spend another's throttle.
 */
export function callerOf(req: Request): Caller {
  return requestOrigin(req);
}


/**
 * Fixed windows in Redis: one GET per counter before the action, one transaction per counter to count it,
 * all in parallel. Each counter is a key of its own subject (the address, the client key), so on a Redis
 * Cluster the two live on different shards and no command spans slots (CONTRACT.md part 14).
 */
export function createCallerThrottle(redis: Redis, options: CallerThrottleOptions): CallerThrottle {
  const windowOf = () => {
    const now = Math.floor(Date.now() / 1000);
    return { window: Math.floor(now / options.windowS), secondsLeft: options.windowS - (now % options.windowS) };
  };
  // Redis down means nothing can be counted; refusing then is safer than allowing unlimited attempts.
  const redisFault = (cause: unknown): never => {
    throw new ServiceUnavailableError(options.unavailableMessage, { cause });
  };
  const keysOf = (caller: Caller, window: number) => {
    const keys = [`identity:${options.name}:addr:${caller.address}:${window}`];
    if (caller.clientKeyId !== undefined) keys.push(`identity:${options.name}:client:${caller.clientKeyId}:${window}`);
    return keys;
  };
  /** Counts one event on each counter (INCR and EXPIRE in one transaction per key); resolves with the counts. */
  const count = (keys: readonly string[]): Promise<number[]> =>
    Promise.all(
      keys.map(async (key) => {
        const results = ((await redis.multi().incr(key).expire(key, options.windowS * 2).exec()) ?? []) as Array<[Error | null, unknown]>;
        const failed = results.find(([err]) => err !== null);
        if (failed !== undefined) throw failed[0];
        return Number(results[0]?.[1]);
      }),
    ).catch(redisFault);
  return {
    async assertAllowed(caller) {
      const { window, secondsLeft } = windowOf();
      const counts = await Promise.all(keysOf(caller, window).map((key) => redis.get(key))).catch(redisFault);
      if (counts.some((count) => Number(count ?? 0) >= options.limit)) throw new TooManyRequestsError(options.message, secondsLeft);
    },
    async record(caller) {
      await count(keysOf(caller, windowOf().window));
    },
    async consume(caller) {
      const { window, secondsLeft } = windowOf();
      const counts = await count(keysOf(caller, window));
      if (counts.some((n) => n > options.limit)) throw new TooManyRequestsError(options.message, secondsLeft);
    },
  };
}

/** Failed logins per minute per client key and per source address (CONTRACT.md part 4). */
export function createLoginThrottle(redis: Redis, failuresPerMinute: number): CallerThrottle {
  return createCallerThrottle(redis, {
    name: 'login-failures',
    limit: failuresPerMinute,
    windowS: 60,
    message: 'Too many login attempts',
    unavailableMessage: 'Login is temporarily unavailable',
  });
}
