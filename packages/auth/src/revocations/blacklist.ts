import type { ChainableCommander } from 'ioredis';
import type { RedisClient as Redis } from './redis-client.ts';
import { revocationExpiry } from '../token-lifetime.ts';
import { luaScript } from './lua.ts';
import { REVOCATION_MIRROR_KEY, RevocationsUnavailableError } from './mirror.ts';
import { STAMP_TTL_MS, type WriteStamp } from './write-stamp.ts';

/**
 * Where revoked access tokens are remembered. The key is shared by every deployable of an environment
 * (they share one Redis and one REDIS_KEY_PREFIX), so a logout at identity is seen by the gateway and risk.
 */
export const BLACKLIST_KEY_PREFIX = 'auth:blacklist:';

/** The Redis key (below the client's own prefix) that marks token `jti` as revoked. */
export function blacklistKey(jti: string): string {
  return `${BLACKLIST_KEY_PREFIX}${jti}`;
}

/** Where ended sessions are remembered: every access token of the session stops working at once. */
export const SESSION_REVOCATION_KEY_PREFIX = 'auth:revoked-session:';

/** The Redis key (below the client's own prefix) that marks session `sid` as ended. */
export function sessionRevocationKey(sid: string): string {
  return `${SESSION_REVOCATION_KEY_PREFIX}${sid}`;
}

/** Every key whose presence revokes a token: its own and its session's. A verifier checks them in one EXISTS. */
export function revocationKeys(token: { tokenId: string; sessionId: string }): [string, string] {
  return [blacklistKey(token.tokenId), sessionRevocationKey(token.sessionId)];
}

/**
 * Revoked access tokens and ended sessions. Each is remembered until `revocationExpiry` of the latest
 * `exp` its tokens may carry: past the last moment any verifier accepts them (token-lifetime.ts), so a
 * revoked token never comes back at the end of its life, and the blacklist never outgrows live tokens.
 */
export interface TokenBlacklist {
  /** Revokes the token that expires at `expiresAt` (epoch seconds); one no verifier accepts any more needs nothing. */
  revoke(jti: string, expiresAt: number): Promise<void>;
  /**
   * Marks sessions ended, so tokens issued before a logout, password change or block stop working
   * everywhere, not only at refresh. `latestExp` (epoch seconds): the latest `exp` any access token of
   * these sessions may carry (now + the access token lifetime, and a moment for a refresh that raced).
   */
  endSessions(sessionIds: readonly string[], latestExp: number): Promise<void>;
  /** The same for sessions each with its own `latestExp`, in one pipeline: a re-seed of the mirror. */
  restoreEndedSessions(sessions: ReadonlyArray<{ sessionId: string; latestExp: number }>): Promise<void>;
  /**
   * True when the token or its session was revoked. Rejects when the store is unreachable, or when it
   * lost its data and the revocations are not re-seeded yet (`RevocationsUnavailableError`): callers fail closed.
   */
  isRevoked(token: { tokenId: string; sessionId: string }): Promise<boolean>;
}

interface BlacklistCommands {
  revocationCheck(mirrorKey: string, tokenKey: string, sessionKey: string, now: string): Promise<number>;
}

/**
 * The blacklist in Redis: one key per token or session, `EXAT` = `revocationExpiry` of its latest `exp`.
 * With a `stamp` (identity's, the writer of revocations), each revocation counts on it in the same
 * transaction, so a Redis that later holds less (a lagging replica promoted) is found out (CONTRACT.md part 13).
 */
export function redisBlacklist(redis: Redis, options: { stamp?: WriteStamp } = {}): TokenBlacklist {
  const { stamp } = options;
  /** Runs the revocation's writes in one transaction, with the stamp's count when there is one. */
  const write = async (transaction: ChainableCommander): Promise<void> => {
    if (stamp !== undefined) transaction.incr(stamp.key).pexpire(stamp.key, STAMP_TTL_MS);
    const results = (await transaction.exec()) ?? [];
    const failed = results.find(([err]) => err !== null);
    if (failed !== undefined) throw failed[0];
    if (stamp !== undefined) stamp.observe(Number(results.at(-2)?.[1]));
  };
  redis.defineCommand('revocationCheck', { numberOfKeys: 3, lua: luaScript('mirror-state', 'is-revoked') });
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  const commands = redis as unknown as BlacklistCommands;
  return {
    async revoke(jti, expiresAt) {
      const until = revocationExpiry(expiresAt);
      if (until * 1000 <= Date.now()) return;
      await write(redis.multi().set(blacklistKey(jti), '1', 'EXAT', until));
    },
    async endSessions(sessionIds, latestExp) {
      const until = revocationExpiry(latestExp);
      if (sessionIds.length === 0 || until * 1000 <= Date.now()) return;
      const transaction = redis.multi();
      for (const sid of sessionIds) transaction.set(sessionRevocationKey(sid), '1', 'EXAT', until);
      await write(transaction);
    },
    async restoreEndedSessions(sessions) {
      const live = sessions.map(({ sessionId, latestExp }) => ({ sessionId, until: revocationExpiry(latestExp) })).filter(({ until }) => until * 1000 > Date.now());
      if (live.length === 0) return;
      const pipeline = redis.pipeline();
      for (const { sessionId, until } of live) pipeline.set(sessionRevocationKey(sessionId), '1', 'EXAT', until);
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([err]) => err !== null);
      if (failed !== undefined) throw failed[0];
    },
    async isRevoked(token) {
      const found = await commands.revocationCheck(REVOCATION_MIRROR_KEY, ...revocationKeys(token), String(Date.now()));
      if (found < 0) throw new RevocationsUnavailableError();
      return found > 0;
    },
  };
}
