/**
 * Revocations: what must stay refused, kept in Redis for every verifier and surviving Redis losing its
 * data (CONTRACT.md parts 4 and 13). Identity records every ended session in Postgres; Redis holds a
 * *mirror* of those records (the blacklist) that the gateway, identity and risk read on every bearer
 * request, in the same script as everything else they ask Redis.
 *
 * The mirror is kept per *bucket* (buckets.ts): sessions are spread over 64 buckets by a hash of the session
 * id, and each bucket is one Redis Cluster hash tag holding its sessions' revocation keys, its tokens'
 * blacklist entries, its own mirror hash (`auth:{rv:<b>}:mirror`) and identity's stamp for it. A bearer check
 * is one script on one slot; a shard that loses its data loses only its buckets, found and re-seeded alone.
 * (The gateway dates its nonces on a slot of their own per client key, `{ck:<keyId>}`: gateway/src/admission.)
 *
 * The life of each mirror hash (mirror.ts):
 *
 *          re-seeded by identity's keeper
 *     ┌─────────────── re-seeding ◄──────────────┐
 *     ▼                                          │ identity's keeper sees it (≤ REVOCATION_MIRROR_CHECK_MS)
 *   whole ──── Redis loses data ────────────► lost   (every bearer request: 503 until whole again)
 *  ready=1     (flush, restart, lagging replica    ready=0, born=now
 *              promoted, a shard lost or replaced,
 *              a revocation that did not reach Redis)
 *
 * The words, once:
 * - *mirror*: the revocations in Redis, a copy of what Postgres holds; *whole* (`ready` = 1) when it holds
 *   every revocation whose tokens may still be accepted.
 * - *born*: when this Redis (or this bucket's slot) was last found without its data (ms). The gateway keeps
 *   a `born` of its own per client key slot: a signature `created` before it is refused there.
 * - *lost*: the hash is missing (created again not ready, born now) or was marked not ready: by a
 *   process that lost or saw replaced the bucket's shard (guardMirrors, shards.ts: a failover may have lost
 *   writes), or by a *stamp*.
 * - *stamp* (write-stamp.ts): a writer's count of its writes that must survive (identity's revocations, one
 *   per bucket; the gateway's nonces, one per client key slot), INCR'd with each write; the writer
 *   remembers the highest count it has *seen*.
 *   Redis holding less went back in time: a replica that lagged was promoted though the hash survived.
 * - *held*: a bucket whose shard this process lost or saw replaced, until its close has landed: the
 *   process's own checks on it fail closed meanwhile, without asking Redis (guardMirrors); and a check's
 *   answer that came back across such a change (sent again after a reconnect, or to a new master after a
 *   MOVED) is not trusted either (`revocationTicket`).
 * - *closed*: the id of a mirror's last close (random per close); a re-seed opens the mirror only if no
 *   close came after the re-seed read it (a close then may be a failover that took the re-seed's writes).
 * - *dirty*: identity's keeper was told a revocation could not be published; it re-seeds once Redis answers.
 * - *re-seed*: identity writes every session ended within a token lifetime (of the lost buckets only) back
 *   from Postgres, then marks each re-seeded mirror ready, unless it was lost again meanwhile (`born` changed): then once more.
 *
 * Files: buckets.ts (the key layout), blacklist.ts (the revocation writes, and the per-request check), mirror.ts (the hash; holds),
 * shards.ts (which buckets a lost or replaced shard holds),
 * write-stamp.ts (stamps), lua/ (every script, loaded once by lua.ts, each function in a file of its own).
 * Identity's keeper (services/identity, revocation mirror keeper) is the one writer of `ready = 1`.
 */
export {
  ALL_REVOCATION_BUCKETS,
  REVOCATION_BUCKETS,
  blacklistKey,
  bucketStampKey,
  bucketTag,
  revocationBucket,
  revocationMirrorKey,
  revocationSlotKeys,
  sessionRevocationKey,
} from './buckets.ts';
export { type TokenBlacklist, mirrorKeyOfSession, redisBlacklist, revocationKeys } from './blacklist.ts';
export {
  MIRROR_STATE_LUA,
  type MirrorSeen,
  type RevocationMirror,
  RevocationsUnavailableError,
  bucketMirrors,
  guardMirrors,
  mirrorCloser,
  revocationMirror,
  revocationTicket,
  sameTicket,
} from './mirror.ts';
export { onShardChange } from './shards.ts';
export type { RedisClient } from './redis-client.ts';
export {
  type BucketStamps,
  type BucketState,
  STAMP_LUA,
  STAMP_TTL_MS,
  type StampCount,
  type StampCheck,
  bucketStamps,
  stampCount,
  watchWriteStamp,
} from './write-stamp.ts';
