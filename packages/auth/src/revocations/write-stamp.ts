import { randomUUID } from 'node:crypto';
import { periodic } from '@platform/service-kit';
import type { RedisClient as Redis } from './redis-client.ts';
import { ALL_REVOCATION_BUCKETS, bucketStampKey, revocationMirrorKey } from './buckets.ts';
import { luaFile, luaScript } from './lua.ts';
import { onClientShardChange } from './mirror.ts';

/**
 * How long a writer's stamp outlives its last write or check: a process checks its own every
 * STAMP_CHECK_MS at least, so only stamps of processes long gone expire.
 */
export const STAMP_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * `stamp_went_back(state_key, stamp_key, seen, last, ttl_ms)` and `stamp_check(mirror_key, stamp_key, seen,
 * last, now, ttl_ms)` (lua/stamp-check.lua), for a script of
 * another module whose writes count on a stamp (the gateway's nonces): put it first in that script.
 */
export const STAMP_LUA = luaFile('stamp-check');

/** One process's count of its writes that must survive, and what it last read back of it. */
export interface StampCount {
  /** The stamp's Redis key (below the client's prefix), unique to this process. */
  readonly key: string;
  /** The highest count Redis answered, as a script argument. */
  seen(): string;
  /** When (ms, this process's clock) Redis answered it, as a script argument. */
  lastWrite(): string;
  /** Takes a count Redis answered after a write. */
  observe(count: number): void;
}

/** Something that checks a writer's stamps (the gateway's, one per client key slot): true when one went back. */
export interface StampCheck {
  /**
   * Compares the counts in Redis with what the writer saw: when Redis holds less, marks the loss
   * (CONTRACT.md part 13) and resolves true. Also keeps the stamps from expiring. Rejects when Redis is
   * unreachable.
   */
  check(): Promise<boolean>;
}

interface BucketCheckCommands {
  revocationBucketCheck(mirrorKey: string, stampKey: string, seen: string, last: string, now: string, ttlMs: string): Promise<string>;
}

/** A bucket's state as identity's keeper reads it (`BucketStamps.check`). */
export interface BucketState {
  bucket: number;
  /** When this bucket's shard was last found without its data (ms). */
  born: number;
  /** Whether the bucket's mirror is whole. */
  ready: boolean;
  /**
   * Whether this check found the writer's stamp gone back while the bucket's mirror was still there (a lagging
   * replica promoted) and marked the bucket lost. A bucket found without its mirror lost its data (a flush,
   * an empty restart): not ready, and not gone back.
   */
  wentBack: boolean;
  /** The id of the mirror's last close ('' for none): a re-seed opens it only if nobody closed it since (`markReady`). */
  closed: string;
}

/**
 * One writer's stamps, one per revocation bucket (buckets.ts): a revocation counts on its bucket's stamp in
 * the transaction that writes it (one slot), so a shard that goes back in time is found out bucket by bucket.
 */
export interface BucketStamps {
  /** The stamp of `bucket`, for that bucket's revocation transactions. */
  stamp(bucket: number): StampCount;
  /**
   * The bucket's stamp compared with what this writer saw (gone back: the bucket is marked lost), then
   * the bucket mirror's state (created not ready when missing). One script on the bucket's slot.
   */
  check(bucket: number): Promise<BucketState>;
}

/** A new set of bucket stamps for a writer (`identity`) on `redis`. */
export function bucketStamps(redis: Redis, writer: string): BucketStamps {
  redis.defineCommand('revocationBucketCheck', { numberOfKeys: 2, lua: luaScript('mirror-state', 'stamp-check', 'bucket-check') });
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  const commands = redis as unknown as BucketCheckCommands;
  const id = randomUUID();
  const stamps = ALL_REVOCATION_BUCKETS.map((bucket) => stampCount(bucketStampKey(bucket, writer, id)));
  const stampOf = (bucket: number): StampCount => {
    const stamp = stamps[bucket];
    if (stamp === undefined) throw new RangeError(`no revocation bucket ${bucket}`);
    return stamp;
  };
  return {
    stamp: stampOf,
    async check(bucket) {
      const stamp = stampOf(bucket);
      const answer = await commands.revocationBucketCheck(revocationMirrorKey(bucket), stamp.key, stamp.seen(), stamp.lastWrite(), String(Date.now()), String(STAMP_TTL_MS));
      const [born, ready, wentBack, closed = ''] = String(answer).split(':');
      return { bucket, born: Number(born), ready: ready === '1', wentBack: wentBack === '1', closed };
    },
  };
}

/** A stamp's count as its writer remembers it, for the stamp at `key` (identity's per bucket, the gateway's per client key). */
export function stampCount(key: string): StampCount {
  let seen = 0;
  let last = 0;
  return {
    key,
    seen: () => String(seen),
    lastWrite: () => String(last),
    observe(count) {
      if (count > seen) {
        seen = count;
        last = Date.now();
      }
    },
  };
}

/** How often a writer checks its stamp when nothing else did: it also keeps the stamp from expiring. */
const STAMP_CHECK_MS = 60_000;

/**
 * Checks `stamp` whenever a shard of `redis` changed (shards.ts: a connection lost or back, a slot moved to
 * another master, as a failover to a replica does) and every `intervalMs`, one check at a time (a change
 * during a check gets one of its own right after it); `onLoss` hears of a Redis that went back in time.
 * Errors (Redis unreachable) are the caller's to log: the next change or interval checks again. `stop`
 * removes the timer and the listeners.
 */
export function watchWriteStamp(
  redis: Redis,
  stamp: StampCheck,
  options: { intervalMs?: number; onLoss: () => void; onError: (err: unknown) => void },
): { stop: () => void } {
  const checks = periodic(
    async () => {
      if (await stamp.check()) options.onLoss();
    },
    { intervalMs: options.intervalMs ?? STAMP_CHECK_MS, onError: options.onError },
  );
  // The client's one shard watch (mirror.ts), which its revocation checks and guards use too.
  const stopChanges = onClientShardChange(redis, () => void checks.runNow());
  checks.start();
  return {
    stop: () => {
      stopChanges();
      void checks.stop();
    },
  };
}
