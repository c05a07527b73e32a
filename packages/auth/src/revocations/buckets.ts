import calculateSlot from 'cluster-key-slot';
import { SLOT_LEDGER_LUA, assetText } from '@platform/service-kit';

/**
 * The revocations' key layout (CONTRACT.md part 14; docs/deploy.md "Redis Cluster"). Sessions are spread over
 * REVOCATION_BUCKETS buckets by a hash of the session id; each bucket is one hash tag, `{rv:<b>}`, so one
 * slot holds, for its sessions: the ended-session keys, the blacklist entries of their tokens, the bucket's
 * ledger (service-kit's slot-ledger.ts, with `ready` and `closed`: lua/buckets.lua) and the writers' stamps.
 * A bearer check is one script on one slot, and the 64 slots spread the traffic over every shard; a shard
 * that loses its data loses only its buckets, found and re-seeded alone.
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
export const ALL_BUCKETS: readonly number[] = Array.from({ length: REVOCATION_BUCKETS }, (_, b) => b);

/** The hash tag of bucket `b`: every key of the bucket starts `auth:{rv:<b>}:`. */
export const bucketTag = (bucket: number): string => `auth:{rv:${bucket}}:`;

/** The ledger of bucket `b` (below the client's prefix; named `mirror` since the first version). */
export const ledgerKey = (bucket: number): string => `${bucketTag(bucket)}mirror`;

/** The key (below the client's prefix) that marks session `sid` of bucket `b` as ended (`sessionKey`, its bucket known already). */
export const sessionKeyIn = (bucket: number, sessionId: string): string => `${bucketTag(bucket)}session:${sessionId}`;

/** The key (below the client's prefix) that marks session `sid` as ended. */
export const sessionKey = (sessionId: string): string => sessionKeyIn(revocationBucket(sessionId), sessionId);

/** The key (below the client's prefix) that marks token `tokenId` of bucket `b` as revoked (`tokenKey`, its bucket known already). */
export const tokenKeyIn = (bucket: number, tokenId: string): string => `${bucketTag(bucket)}token:${tokenId}`;

/** The key (below the client's prefix) that marks token `tokenId` as revoked: in its session's bucket. */
export const tokenKey = (token: { tokenId: string; sessionId: string }): string => tokenKeyIn(revocationBucket(token.sessionId), token.tokenId);

/** A writer's stamp in bucket `b`: one per writing process and bucket. */
export const stampKey = (bucket: number, writer: string, id: string): string => `${bucketTag(bucket)}stamp:${writer}:${id}`;

/** The cluster slot of every bucket (its hash tag decides it: the environment's key prefix holds no braces). */
export const BUCKET_SLOTS: readonly number[] = ALL_BUCKETS.map((bucket) => calculateSlot(ledgerKey(bucket)));

/** The buckets on `slots` (a topology change's), `'all'` for every bucket. */
export function bucketsOn(slots: readonly number[] | 'all'): number[] {
  if (slots === 'all') return [...ALL_BUCKETS];
  const held = new Set(slots);
  return ALL_BUCKETS.filter((bucket) => held.has(BUCKET_SLOTS[bucket] ?? -1));
}

/**
 * lua/buckets.lua on the loss primitive: the functions of every script below, `is_revoked(ledger, token_key,
 * session_key, now)` among them, for a script of another module that runs the revocation check itself (the
 * gateway's admission on one Redis: `RevocationReader.checkOf`).
 */
export const REVOCATION_LIBRARY_LUA = `${SLOT_LEDGER_LUA}\n${assetText(new URL('./lua/buckets.lua', import.meta.url))}`;

/** The module's scripts, each one call of lua/buckets.lua (for `defineCommand`). */
export const BUCKET_SCRIPTS = {
  /** KEYS: ledger, token key, session key; ARGV: now. */
  revocationCheck: { numberOfKeys: 3, lua: `${REVOCATION_LIBRARY_LUA}\nreturn is_revoked(KEYS[1], KEYS[2], KEYS[3], ARGV[1])` },
  /** KEYS: ledger; ARGV: now, close id. */
  revocationClose: { numberOfKeys: 1, lua: `${REVOCATION_LIBRARY_LUA}\nreturn bucket_close(KEYS[1], ARGV[1], ARGV[2])` },
  /** KEYS: ledger; ARGV: born, closed. */
  revocationOpen: { numberOfKeys: 1, lua: `${REVOCATION_LIBRARY_LUA}\nreturn bucket_open(KEYS[1], ARGV[1], ARGV[2])` },
  /** KEYS: ledger, stamp; ARGV: seen, last, now, ttl. */
  revocationBucketCheck: { numberOfKeys: 2, lua: `${REVOCATION_LIBRARY_LUA}\nreturn bucket_check(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])` },
} as const;

/** The scripts as ioredis defines them on a client (`defineCommand`: methods TypeScript cannot see). */
export interface BucketCommands {
  revocationCheck(ledger: string, token: string, session: string, now: string): Promise<number>;
  revocationClose(ledger: string, now: string, closeId: string): Promise<string>;
  revocationOpen(ledger: string, born: string, closed: string): Promise<number>;
  revocationBucketCheck(ledger: string, stamp: string, seen: string, last: string, now: string, ttlMs: string): Promise<string>;
}
