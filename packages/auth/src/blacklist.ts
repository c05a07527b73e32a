import type { Redis } from 'ioredis';

/**
 * Where revoked access tokens are remembered. The key is shared by every deployable of an environment
 * (they share one Redis and one REDIS_KEY_PREFIX), so a logout at identity is seen by the gateway and risk.
 */
export const BLACKLIST_KEY_PREFIX = 'auth:blacklist:';

/** The Redis key (below the client's own prefix) that marks token `jti` as revoked. */
export function blacklistKey(jti: string): string {
  return `${BLACKLIST_KEY_PREFIX}${jti}`;
}

/** Revoked access tokens, each remembered until it would have expired anyway. */
export interface TokenBlacklist {
  /** Marks the token revoked until `expiresAt` (epoch seconds); a token already expired needs nothing. */
  revoke(jti: string, expiresAt: number): Promise<void>;
  /** True when the token was revoked. Rejects when the store is unreachable: callers fail closed. */
  isRevoked(jti: string): Promise<boolean>;
}

/** The blacklist in Redis: one key per token with `EXAT` = the token's `exp`, so it never outgrows live tokens. */
export function redisBlacklist(redis: Redis): TokenBlacklist {
  return {
    async revoke(jti, expiresAt) {
      if (expiresAt * 1000 <= Date.now()) return;
      // EXAT takes whole seconds; a NumericDate may have a fraction (RFC 7519), and Redis rejects it.
      await redis.set(blacklistKey(jti), '1', 'EXAT', Math.ceil(expiresAt));
    },
    async isRevoked(jti) {
      return (await redis.exists(blacklistKey(jti))) === 1;
    },
  };
}
