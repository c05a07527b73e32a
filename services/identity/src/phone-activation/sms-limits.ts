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

/** The limits in Redis: `SET NX EX` for the cooldown, `INCR` per UTC day for each cap. */
export function createSmsLimits(redis: Redis, options: { cooldownS: number; dailyCap: number; dailyCapPerAccount: number }): SmsLimits {
  const cooldownKey = (accountId: string) => `identity:phone-activation:cooldown:${accountId}`;
  const capKey = (phoneNumber: string, day: string) => `identity:phone-activation:daily:${phoneNumber}:${day}`;
  const accountCapKey = (accountId: string, day: string) => `identity:phone-activation:daily-account:${accountId}:${day}`;
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
      const results = ((await redis.multi().incr(phoneKey).expire(phoneKey, 2 * 86_400).incr(accountKey).expire(accountKey, 2 * 86_400).exec().catch(unavailable)) ??
        []) as Array<[Error | null, unknown]>;
      const [phoneCount, accountCount] = [Number(results[0]?.[1]), Number(results[2]?.[1])];
      if (phoneCount > options.dailyCap || accountCount > options.dailyCapPerAccount) {
        await redis.multi().decr(phoneKey).decr(accountKey).exec().catch(() => undefined);
        const what = phoneCount > options.dailyCap ? 'this phone number' : 'this account';
        throw new TooManyRequestsError(`Daily SMS limit reached for ${what}`, secondsLeft);
      }
    },
    async release(accountId, phoneNumber) {
      const { day } = today();
      await redis
        .multi()
        .del(cooldownKey(accountId))
        .decr(capKey(phoneNumber, day))
        .decr(accountCapKey(accountId, day))
        .exec()
        .catch(() => undefined);
    },
  };
}
