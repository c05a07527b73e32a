import { randomBytes } from 'node:crypto';
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
 * Counts events per caller (per client key and per source address) over a sliding window: failed logins
 * in the last minute (CONTRACT.md part 4), password reset requests in the last hour. Any window's span
 * holds at most the limit, not twice it across the turn of a clock minute or hour as fixed windows allowed.
 */
export interface CallerThrottle {
  /** Throws 429 with Retry-After when the caller used up its allowance for the window that ends now. */
  assertAllowed(caller: Caller): Promise<void>;
  /**
   * Counts one event unless the caller's allowance is used up, then throws 429: the look and the count are
   * one step in Redis, so N concurrent requests cannot all pass the look before any of them is counted, and
   * a refused request is not counted (the caller's allowance returns as its events age out).
   */
  consume(caller: Caller): Promise<void>;
  /**
   * `consume`, for an event whose outcome is not known yet (a login before its password's compare):
   * `release` takes it back when it turns out to be none (the password was right). Checks running at once
   * see each other's events before their outcomes, so together they pass no more than the limit.
   */
  reserve(caller: Caller): Promise<{ release: () => Promise<void> }>;
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
  /** The clock (ms), for tests. */
  now?: () => number;
}

/**
 * The caller of a request: the client key and source address the gateway vouched for (CONTRACT.md
 * part 10), or the socket peer and no client key, so a direct caller cannot spend another's throttle.
 */
export function callerOf(req: Request): Caller {
  return requestOrigin(req);
}

/**
 * One subject's events (a sorted set, scored by the time in ms): those at or before `cutoff` (the window's
 * start) go, then `peek` counts, `take` adds the event unless the count is at the limit. Returns the count
 * after, whether the event was added, and the ms until the count is below the limit again (0 when it is; the
 * count may pass the limit only if the limit was lowered since). The times go to Redis as the text they came
 * in (packages/embedded's Lua rule).
 */
const THROTTLE_SCRIPT = `
local key, now, cutoff, window, limit, member, mode = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], ARGV[6]
redis.call('ZREMRANGEBYSCORE', key, '-inf', cutoff)
local count = redis.call('ZCARD', key)
local added = 0
if mode == 'take' and count < limit then
  redis.call('ZADD', key, now, member)
  redis.call('PEXPIRE', key, window)
  count = count + 1
  added = 1
end
local wait = 0
if count >= limit then
  local entry = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
  wait = tonumber(entry[2]) + window - tonumber(now)
end
return { count, added, wait }
`;

type Mode = 'peek' | 'take';
type ThrottleRedis = Redis & { callerThrottle(key: string, now: number, cutoff: number, windowMs: number, limit: number, member: string, mode: Mode): Promise<[number, number, number]> };

/**
 * Sliding windows in Redis: one script call per subject (the address, the client key), in parallel. Each
 * subject is a key of its own, so on a Redis Cluster the two live on different shards and no script spans
 * slots (CONTRACT.md part 14).
 */
export function createCallerThrottle(redis: Redis, options: CallerThrottleOptions): CallerThrottle {
  redis.defineCommand('callerThrottle', { numberOfKeys: 1, lua: THROTTLE_SCRIPT });
  const scripted = redis as ThrottleRedis;
  const windowMs = options.windowS * 1000;
  const now = options.now ?? Date.now;
  // Redis down means nothing can be counted; refusing then is safer than allowing unlimited attempts.
  const redisFault = (cause: unknown): never => {
    throw new ServiceUnavailableError(options.unavailableMessage, { cause });
  };
  const keysOf = (caller: Caller) => {
    const keys = [`identity:${options.name}:addr:${caller.address}`];
    if (caller.clientKeyId !== undefined) keys.push(`identity:${options.name}:client:${caller.clientKeyId}`);
    return keys;
  };
  /**
   * Runs `mode` on each of the caller's subjects; throws 429 when one of them is at its limit (a peek) or did
   * not take the event (a take). Resolves with the event's member and the keys that took it.
   * The two subjects may be on different shards, so no one step takes both: a request one refuses and the other
   * took is taken back from the other before the 429, so that a refused request counts nowhere (while it is
   * taken back, a request racing it may find that subject one event fuller: stricter for a moment, never
   * looser). Were the taking back to fail (Redis failing meanwhile), the event stays: stricter, never looser.
   */
  const run = async (caller: Caller, mode: Mode): Promise<{ member: string; taken: string[] }> => {
    const at = now();
    const member = `${at}:${randomBytes(6).toString('base64url')}`;
    const keys = keysOf(caller);
    const results = await Promise.all(keys.map((key) => scripted.callerThrottle(key, at, at - windowMs, windowMs, options.limit, member, mode))).catch(redisFault);
    const taken = keys.filter((_key, i) => results[i]?.[1] === 1);
    const waits = results.filter(([count, added]) => (mode === 'peek' ? count >= options.limit : added === 0)).map(([, , wait]) => wait);
    if (waits.length === 0) return { member, taken };
    await takeBack(member, taken);
    throw new TooManyRequestsError(options.message, Math.max(...waits) / 1000);
  };
  /** Removes the event `member` from `keys`; a failure leaves it counted (stricter, never looser). */
  const takeBack = async (member: string, keys: readonly string[]): Promise<void> => {
    await Promise.all(keys.map((key) => redis.zrem(key, member))).catch(() => undefined);
  };
  return {
    async assertAllowed(caller) {
      await run(caller, 'peek');
    },
    async consume(caller) {
      await run(caller, 'take');
    },
    async reserve(caller) {
      const { member, taken } = await run(caller, 'take');
      return { release: () => takeBack(member, taken) };
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
