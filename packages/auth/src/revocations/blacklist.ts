import type { ChainableCommander } from 'ioredis';
import { revocationExpiry } from '../token-lifetime.ts';
import { blacklistKey, revocationBucket, revocationMirrorKey, revocationSlotKeys, sessionRevocationKey } from './buckets.ts';
import { luaScript } from './lua.ts';
import { RevocationsUnavailableError, revocationTicket, sameTicket, shardsOf } from './mirror.ts';
import type { RedisClient as Redis } from './redis-client.ts';
import { type BucketStamps, STAMP_TTL_MS } from './write-stamp.ts';

export { blacklistKey, sessionRevocationKey } from './buckets.ts';

/** Every key whose presence revokes a token: its own and its session's (one slot). A verifier checks them in one EXISTS. */
export function revocationKeys(token: { tokenId: string; sessionId: string }): [string, string] {
  const keys = revocationSlotKeys(token);
  return [keys.token, keys.session];
}

/**
 * Revoked access tokens and ended sessions. Each is remembered until `revocationExpiry` of the latest
 * `exp` its tokens may carry: past the last moment any verifier accepts them (token-lifetime.ts), so a
 * revoked token never comes back at the end of its life, and the blacklist never outgrows live tokens.
 * The keys are shared by every deployable of an environment (one Redis or cluster, one REDIS_KEY_PREFIX),
 * so a logout at identity is seen by the gateway and risk.
 */
export interface TokenBlacklist {
  /** Revokes the token that expires at `expiresAt` (epoch seconds); one no verifier accepts any more needs nothing. */
  revoke(token: { tokenId: string; sessionId: string }, expiresAt: number): Promise<void>;
  /**
   * Marks sessions ended, so tokens issued before a logout, password change or block stop working
   * everywhere, not only at refresh. `latestExp` (epoch seconds): the latest `exp` any access token of
   * these sessions may carry (now + the access token lifetime, and a moment for a refresh that raced).
   */
  endSessions(sessionIds: readonly string[], latestExp: number): Promise<void>;
  /** The same for sessions each with its own `latestExp`, one pipeline per bucket: a re-seed of the mirror. */
  restoreEndedSessions(sessions: ReadonlyArray<{ sessionId: string; latestExp: number }>): Promise<void>;
  /**
   * True when the token or its session was revoked. Rejects when the store is unreachable, or when its
   * bucket lost its data and is not re-seeded yet (`RevocationsUnavailableError`): callers fail closed.
   */
  isRevoked(token: { tokenId: string; sessionId: string }): Promise<boolean>;
}

interface BlacklistCommands {
  revocationCheck(mirrorKey: string, tokenKey: string, sessionKey: string, now: string): Promise<number>;
}

/** `items` grouped by the revocation bucket of each one's session: one transaction per bucket (one slot). */
function byBucket<T>(items: readonly T[], sessionOf: (item: T) => string): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const bucket = revocationBucket(sessionOf(item));
    const group = groups.get(bucket);
    if (group === undefined) groups.set(bucket, [item]);
    else group.push(item);
  }
  return groups;
}

/** Throws the first error of a transaction's or pipeline's results. */
function assertAllDone(results: Array<[Error | null, unknown]> | null): Array<[Error | null, unknown]> {
  const failed = (results ?? []).find(([err]) => err !== null);
  if (failed !== undefined) throw failed[0];
  return results ?? [];
}

/**
 * The blacklist in Redis: one key per token or session, `EXAT` = `revocationExpiry` of its latest `exp`,
 * in the bucket of its session (buckets.ts). With `stamps` (identity's, the writer of revocations), each
 * revocation counts on its bucket's stamp in the same transaction, so a shard that later holds less (a
 * lagging replica promoted) is found out (CONTRACT.md parts 13 and 14).
 */
export function redisBlacklist(redis: Redis, options: { stamps?: BucketStamps } = {}): TokenBlacklist {
  const { stamps } = options;
  /** Runs one bucket's revocation writes in one transaction, with the bucket stamp's count when there is one. */
  const write = async (bucket: number, transaction: ChainableCommander): Promise<void> => {
    const stamp = stamps?.stamp(bucket);
    if (stamp !== undefined) transaction.incr(stamp.key).pexpire(stamp.key, STAMP_TTL_MS);
    const results = assertAllDone(await transaction.exec());
    if (stamp !== undefined) stamp.observe(Number(results.at(-2)?.[1]));
  };
  redis.defineCommand('revocationCheck', { numberOfKeys: 3, lua: luaScript('mirror-state', 'is-revoked') });
  // The client's shard watch, from now on: an answer that comes back across a change is not trusted.
  shardsOf(redis);
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  const commands = redis as unknown as BlacklistCommands;
  return {
    async revoke(token, expiresAt) {
      const until = revocationExpiry(expiresAt);
      if (until * 1000 <= Date.now()) return;
      await write(revocationBucket(token.sessionId), redis.multi().set(blacklistKey(token), '1', 'EXAT', until));
    },
    async endSessions(sessionIds, latestExp) {
      const until = revocationExpiry(latestExp);
      if (sessionIds.length === 0 || until * 1000 <= Date.now()) return;
      // One transaction per bucket, in parallel: a cluster refuses one that spans slots.
      await Promise.all(
        [...byBucket(sessionIds, (sid) => sid)].map(([bucket, sids]) => {
          const transaction = redis.multi();
          for (const sid of sids) transaction.set(sessionRevocationKey(sid), '1', 'EXAT', until);
          return write(bucket, transaction);
        }),
      );
    },
    async restoreEndedSessions(sessions) {
      const live = sessions.map(({ sessionId, latestExp }) => ({ sessionId, until: revocationExpiry(latestExp) })).filter(({ until }) => until * 1000 > Date.now());
      await Promise.all(
        [...byBucket(live, (session) => session.sessionId)].map(async ([, group]) => {
          const pipeline = redis.pipeline();
          for (const { sessionId, until } of group) pipeline.set(sessionRevocationKey(sessionId), '1', 'EXAT', until);
          assertAllDone(await pipeline.exec());
        }),
      );
    },
    async isRevoked(token) {
      // Its shard changed under this process and its mirror is not closed yet (guardMirrors): fail closed,
      // without asking; and an answer that came back across such a change is not trusted either.
      const bucket = revocationBucket(token.sessionId);
      const ticket = revocationTicket(redis, bucket);
      if (ticket === undefined) throw new RevocationsUnavailableError();
      const keys = revocationSlotKeys(token);
      const found = await commands.revocationCheck(keys.mirror, keys.token, keys.session, String(Date.now()));
      if (found < 0 || !sameTicket(redis, bucket, ticket)) throw new RevocationsUnavailableError();
      return found > 0;
    },
  };
}

/** The mirror key of the bucket `sessionId` falls in (for tests and tools that inspect one bucket). */
export function mirrorKeyOfSession(sessionId: string): string {
  return revocationMirrorKey(revocationBucket(sessionId));
}
