import { ServiceUnavailableError, TooManyRequestsError } from '@platform/errors';
import type { Redis } from '@platform/service-kit';

/** The two brakes on activation SMS: a cooldown per account and a daily cap per phone number. */
export interface SmsLimits {
  /** Claims the account's cooldown and one unit of the phone's daily cap, or throws 429. */
  claim(accountId: string, phoneNumber: string): Promise<void>;
  /** Gives both back after the provider failed, so the client may retry at once. */
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

/** Both limits in Redis: `SET NX EX` for the cooldown, `INCR` per UTC day for the cap. */
export function createSmsLimits(redis: Redis, options: { cooldownS: number; dailyCap: number }): SmsLimits {
  const cooldownKey = (accountId: string) => `identity:phone-activation:cooldown:${accountId}`;
  const capKey = (phoneNumber: string, day: string) => `identity:phone-activation:daily:${phoneNumber}:${day}`;
  return {
    async claim(accountId, phoneNumber) {
      const claimed = await redis.set(cooldownKey(accountId), '1', 'EX', options.cooldownS, 'NX').catch(unavailable);
      if (claimed === null) {
        const ttl = await redis.ttl(cooldownKey(accountId)).catch(unavailable);
        throw new TooManyRequestsError('Too many activation requests; try again later', ttl > 0 ? ttl : options.cooldownS);
      }
      const { day, secondsLeft } = today();
      const [[, count] = []] = ((await redis.multi().incr(capKey(phoneNumber, day)).expire(capKey(phoneNumber, day), 2 * 86_400).exec().catch(unavailable)) ??
        []) as Array<[Error | null, unknown]>;
      if (Number(count) > options.dailyCap) {
        await redis.decr(capKey(phoneNumber, day)).catch(() => undefined);
        throw new TooManyRequestsError('Daily SMS limit reached for this phone number', secondsLeft);
      }
    },
    async release(accountId, phoneNumber) {
      await redis
        .multi()
        .del(cooldownKey(accountId))
        .decr(capKey(phoneNumber, today().day))
        .exec()
        .catch(() => undefined);
    },
  };
}
