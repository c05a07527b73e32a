/**
 * The revocations' key layout on a Redis Cluster (CONTRACT.md part 14; README "Key layout"). Sessions are
 * spread over REVOCATION_BUCKETS buckets by a hash of the session id; each bucket is one hash tag,
 * `{rv:<b>}`, so one slot holds, for its sessions: the ended-session keys, the blacklist entries of their
 * tokens, the bucket's own mirror hash and the writers' stamps. A bearer check (mirror state and two
 * EXISTS) is one script on one slot, and the buckets' 64 slots spread the traffic over every shard. A
 * shard that loses its data loses only its buckets (their mirrors found missing and re-seeded alone).
 */
export const REVOCATION_BUCKETS = 64;

/** The bucket (0…REVOCATION_BUCKETS-1) of session `sid`: FNV-1a (32 bits) of its text. */
export function revocationBucket(sessionId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i += 1) {
    hash ^= sessionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % REVOCATION_BUCKETS;
}

/** Every bucket, in order. */
export const ALL_REVOCATION_BUCKETS: readonly number[] = Array.from({ length: REVOCATION_BUCKETS }, (_, b) => b);

/** The hash tag of bucket `b`: every key of the bucket starts `auth:{rv:<b>}:`. */
export function bucketTag(bucket: number): string {
  return `auth:{rv:${bucket}}:`;
}

/** The mirror hash (`born`, `ready`, `closed`) of bucket `b` (below the client's prefix). */
export function revocationMirrorKey(bucket: number): string {
  return `${bucketTag(bucket)}mirror`;
}

/** The key (below the client's prefix) that marks session `sid` as ended. */
export function sessionRevocationKey(sessionId: string): string {
  return `${bucketTag(revocationBucket(sessionId))}session:${sessionId}`;
}

/** The key (below the client's prefix) that marks token `tokenId` as revoked: in its session's bucket. */
export function blacklistKey(token: { tokenId: string; sessionId: string }): string {
  return `${bucketTag(revocationBucket(token.sessionId))}token:${token.tokenId}`;
}

/**
 * The three keys of one token's revocation check, all of one slot: its bucket's mirror, its own blacklist
 * entry and its session's. What a script of another module (the gateway's admission, once split by slot)
 * checks with `mirror_state` (MIRROR_STATE_LUA) and one EXISTS of the other two.
 */
export function revocationSlotKeys(token: { tokenId: string; sessionId: string }): { mirror: string; token: string; session: string } {
  const bucket = revocationBucket(token.sessionId);
  return { mirror: revocationMirrorKey(bucket), token: blacklistKey(token), session: sessionRevocationKey(token.sessionId) };
}

/** A writer's stamp in bucket `b` (write-stamp.ts): one per process and bucket, beside the bucket's mirror. */
export function bucketStampKey(bucket: number, writer: string, id: string): string {
  return `${bucketTag(bucket)}stamp:${writer}:${id}`;
}
