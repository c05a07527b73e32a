import { ServiceUnavailableError, TooManyRequestsError } from '@platform/errors';
import type { Redis } from '@platform/service-kit';

/**
 * The brakes on activation SMS: a cooldown per account, a daily cap per phone number (one number cannot
 * be flooded from many accounts) and a daily cap per account (one account cannot send SMS all day long,
 * to one number or to many, and run up the bill).
 */
export interface SmsLimits {
  /** Claims the account's cooldown and one unit of each daily cap, or throws 429. */
  claim(accountId: string, phoneNumber: string): Promise<void>;
  /** Gives them back after the provider failed, so the client may retry at once. */
  release(accountId: string, phoneNumber: string): Promise<void>;
}

function unavailable(cause: unknown): never {
  // Without Redis no SMS could be counted: refusing is what keeps the bill bounded.
  throw new ServiceUnavailableError('Phone activation is temporarily unavailable', { cause });
}

function today(): { day: string; secondsLeft: number } {
  const now = new Date();
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return { day: now.toISOString().slice(0, 10), secondsLeft: Math.ceil((midnight - now.getTime()) / 1000) };
}

/** The Redis key (below REDIS_KEY_PREFIX) of an account's cooldown between two activation SMS: in the account's hash tag. */
export function smsCooldownKey(accountId: string): string {
  return `identity:phone-activation:{account:${accountId}}:cooldown`;
}

/** `INCR` (or `DECR` with -1) and `EXPIRE` of one key in one transaction; resolves with the new count. */
async function step(redis: Redis, key: string, by: 1 | -1): Promise<number> {
  const transaction = by === 1 ? redis.multi().incr(key) : redis.multi().decr(key);
  const results = ((await transaction.expire(key, 2 * 86_400).exec()) ?? []) as Array<[Error | null, unknown]>;
  const failed = results.find(([err]) => err !== null);
  if (failed !== undefined) throw failed[0];
  return Number(results[0]?.[1]);
}

/**
 * The limits in Redis: `SET NX EX` for the cooldown, `INCR` per UTC day for each cap. An account's keys
 * share its hash tag, a phone number's counter is its own: no command spans two slots of a Redis Cluster
 * (CONTRACT.md part 14), and the two subjects' counts go out in parallel.
 */
export function createSmsLimits(redis: Redis, options: { cooldownS: number; dailyCap: number; dailyCapPerAccount: number }): SmsLimits {
  const cooldownKey = smsCooldownKey;
  const capKey = (phoneNumber: string, day: string) => `identity:phone-activation:daily:${phoneNumber}:${day}`;
  const accountCapKey = (accountId: string, day: string) => `identity:phone-activation:{account:${accountId}}:daily:${day}`;
  return {
    async claim(accountId, phoneNumber) {
      const claimed = await redis.set(cooldownKey(accountId), '1', 'EX', options.cooldownS, 'NX').catch(unavailable);
      if (claimed === null) {
        const ttl = await redis.ttl(cooldownKey(accountId)).catch(unavailable);
        throw new TooManyRequestsError('Too many activation requests; try again later', ttl > 0 ? ttl : options.cooldownS);
      }
      const { day, secondsLeft } = today();
      const [phoneKey, accountKey] = [capKey(phoneNumber, day), accountCapKey(accountId, day)];
      // Counted first, judged after: concurrent claims cannot all pass a check made before any of them counted.
      const [phoneCount, accountCount] = await Promise.all([step(redis, phoneKey, 1), step(redis, accountKey, 1)]).catch(unavailable);
      if (phoneCount > options.dailyCap || accountCount > options.dailyCapPerAccount) {
        await Promise.all([step(redis, phoneKey, -1), step(redis, accountKey, -1)]).catch(() => undefined);
        const what = phoneCount > options.dailyCap ? 'this phone number' : 'this account';
        throw new TooManyRequestsError(`Daily SMS limit reached for ${what}`, secondsLeft);
      }
    },
    async release(accountId, phoneNumber) {
      const { day } = today();
      await Promise.all([
        redis.multi().del(cooldownKey(accountId)).decr(accountCapKey(accountId, day)).exec(),
        step(redis, capKey(phoneNumber, day), -1),
      ]).catch(() => undefined);
    },
  };
}
