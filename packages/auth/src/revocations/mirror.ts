import { randomUUID } from 'node:crypto';
import type { Logger } from '@platform/service-kit';
import type { RedisClient as Redis } from './redis-client.ts';
import { ALL_REVOCATION_BUCKETS, revocationMirrorKey } from './buckets.ts';
import { luaFile, luaScript } from './lua.ts';
import { type ShardWatch, bucketRoute, onShardChange } from './shards.ts';

/**
 * A bucket's mirror state hash (buckets.ts: one per bucket, on the bucket's slot). Module head: index.ts.
 * Redis holds a mirror of the revocations identity records in Postgres (CONTRACT.md part 13). This hash
 * says whether the bucket's mirror is whole: `born` is when the platform found Redis without it (ms, the clock of
 * the process that noticed), `ready` is `1` once identity has re-seeded every revocation that may still be live. A Redis
 * that lost its data has no hash; whoever notices first creates it not ready, and from then on every
 * request with a bearer token fails closed until identity has re-seeded.
 */
interface MirrorCommands {
  revocationMirrorState(key: string, now: string): Promise<string>;
  revocationMirrorNotReady(key: string, now: string, closeId: string): Promise<number>;
  revocationMirrorReady(key: string, born: string, closed: string): Promise<number>;
}

/** Which mirror a re-seed read: its `born` and its last close's id (`closed`, '' for none), for `markReady`. */
export interface MirrorSeen {
  born: number;
  closed: string;
}

/** The mirror's state as identity's keeper reads and changes it. */
export interface RevocationMirror {
  /** Whether the mirror is whole, since when this Redis has it, its last close; a missing mirror is created not ready. */
  state(): Promise<MirrorSeen & { ready: boolean }>;
  /** Fails every bearer request closed until `markReady` (a revocation may be missing from Redis); returns `born`. */
  markNotReady(): Promise<number>;
  /** Opens again after a re-seed of the mirror as `seen`; false when Redis lost it, or someone closed it, meanwhile (re-seed again). */
  markReady(seen: MirrorSeen): Promise<boolean>;
}

/** Defines the mirror scripts on `redis` once (defineCommand again would load them again). */
function mirrorCommands(redis: Redis): MirrorCommands {
  const commands = redis as unknown as Partial<MirrorCommands>;
  if (commands.revocationMirrorReady === undefined) {
    redis.defineCommand('revocationMirrorState', { numberOfKeys: 1, lua: luaScript('mirror-state', 'mirror-read') });
    redis.defineCommand('revocationMirrorNotReady', { numberOfKeys: 1, lua: luaScript('mirror-state', 'mirror-close') });
    redis.defineCommand('revocationMirrorReady', { numberOfKeys: 1, lua: luaScript('mirror-open') });
  }
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  return redis as unknown as MirrorCommands;
}

/** The mirror hash `key` (a bucket's: `revocationMirrorKey(b)`) on `redis`, whose key prefix is the environment's. */
export function revocationMirror(redis: Redis, key: string): RevocationMirror {
  const commands = mirrorCommands(redis);
  return {
    async state() {
      const [born, ready, closed = ''] = String(await commands.revocationMirrorState(key, String(Date.now()))).split(':');
      return { born: Number(born), ready: ready === '1', closed };
    },
    async markNotReady() {
      return Number(await commands.revocationMirrorNotReady(key, String(Date.now()), randomUUID()));
    },
    async markReady(seen) {
      return Number(await commands.revocationMirrorReady(key, String(seen.born), seen.closed)) === 1;
    },
  };
}

/** Every bucket's mirror on `redis`, in bucket order. */
export function bucketMirrors(redis: Redis): RevocationMirror[] {
  return ALL_REVOCATION_BUCKETS.map((bucket) => revocationMirror(redis, revocationMirrorKey(bucket)));
}

/**
 * Closes every bucket's mirror (not ready, births kept), one command per slot, in parallel. Its scripts are defined when this is called, not when the returned function runs: ioredis'
 * auto-pipeline of a turn already under way knows only the commands defined before it began.
 */
export function mirrorCloser(redis: Redis): () => Promise<void> {
  const mirrors = bucketMirrors(redis);
  return async () => {
    await Promise.all(mirrors.map((mirror) => mirror.markNotReady()));
  };
}

/** Thrown by a verifier while the mirror is not whole: a 503, never a token accepted on a partial mirror. */
export class RevocationsUnavailableError extends Error {
  constructor() {
    super('the revocation mirror in Redis is not whole (Redis lost its data); identity is re-seeding it');
    this.name = 'RevocationsUnavailableError';
  }
}

/**
 * What a client's revocation checks rely on: one shard watch, a count per bucket of the changes it heard,
 * the guards' holds, and whatever else acts on a change (`onClientShardChange`).
 */
interface ClientShards {
  watch: ShardWatch;
  changes: Uint32Array;
  /** Each guard's hold on a change (two keepers on one client, say: one stopping leaves the other's). */
  guards: Set<{ holds: ReadonlyMap<number, number>; hold: (buckets: readonly number[]) => void }>;
  /** Told after the counts and the holds, so that what they do finds the buckets held already. */
  listeners: Set<(buckets: readonly number[]) => void>;
}

const clientShards = new WeakMap<Redis, ClientShards>();

/**
 * The one shard watch of `redis`, started on first use (by its blacklist or a guard) and kept as long as
 * the client: every check on the client compares its answer with it, guarded or not.
 */
export function shardsOf(redis: Redis): ClientShards {
  let shards = clientShards.get(redis);
  if (shards === undefined) {
    const changes = new Uint32Array(ALL_REVOCATION_BUCKETS.length);
    const guards: ClientShards['guards'] = new Set();
    const listeners: ClientShards['listeners'] = new Set();
    const count = (buckets: readonly number[]): void => {
      for (const bucket of buckets) changes[bucket] = (changes[bucket] ?? 0) + 1;
    };
    const watch = onShardChange(
      redis,
      (buckets) => {
        count(buckets);
        for (const guard of guards) guard.hold(buckets);
        for (const listener of listeners) listener(buckets);
      },
      count,
    );
    shards = { watch, changes, guards, listeners };
    clientShards.set(redis, shards);
  }
  return shards;
}

/**
 * Calls `changed` with the buckets of every shard change `redis` hears (shards.ts), through the client's one
 * watch (`shardsOf`), after the guards' holds. Returns the function that stops it.
 */
export function onClientShardChange(redis: Redis, changed: (buckets: readonly number[]) => void): () => void {
  const { listeners } = shardsOf(redis);
  // A wrapper of its own: the same function passed twice is two listeners, each stopped by its own call.
  const listener = (buckets: readonly number[]): void => changed(buckets);
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/**
 * Where a revocation check of `bucket` on `redis` stands before it is sent: undefined while a guard holds
 * the bucket (its shard changed and its mirror is not closed yet: fail closed without asking), or while
 * the client already routes it to another master than its last slot map said (a MOVED followed before the
 * refresh it starts), else a ticket to compare after the answer (`sameTicket`): an answer that came back
 * across a shard change (a check sent again after a reconnect, or to a new master after a MOVED) is not
 * trusted either.
 */
export function revocationTicket(redis: Redis, bucket: number): string | undefined {
  const shards = shardsOf(redis);
  for (const guard of shards.guards) if (guard.holds.has(bucket)) return undefined;
  if (shards.watch.routeMoved(bucket)) return undefined;
  return `${shards.changes[bucket] ?? 0}@${bucketRoute(redis, bucket)}`;
}

/** Whether nothing changed for `bucket` on `redis` since `ticket` was taken (`revocationTicket`). */
export function sameTicket(redis: Redis, bucket: number, ticket: string): boolean {
  return revocationTicket(redis, bucket) === ticket;
}

/** How long a guard waits before it tries again to close a bucket whose shard did not answer. */
const CLOSE_RETRY_MS = 200;

/**
 * For every process that checks tokens against the mirror (the gateway, identity, risk): a shard that
 * this process lost or saw replaced (shards.ts) may be a replica that lagged, which kept the bucket's
 * mirror hash but not the revocations written just before, and identity (their writer) may not have
 * noticed yet. So the process *holds* those buckets at once (its `isRevoked` on them fails closed, without
 * asking Redis) and closes their mirrors in Redis (not ready, births kept); once a bucket's close has
 * landed the hold is let go, and the mirror keeps it closed, for every process, until identity has
 * re-seeded it from Postgres: about a second. A close that fails (the shard is still down) is tried again
 * every CLOSE_RETRY_MS. The price of a mere network blip is the same second of 503s on that shard's
 * buckets. A close that fails is a debug line on `logger`, once per outage (the shard is down; its
 * process's Redis errors say so already). `closed` hears which buckets' closes landed (identity's keeper
 * re-seeds them at once).
 */
export function guardMirrors(
  redis: Redis,
  options: { logger: Pick<Logger, 'debug'>; closed?: (buckets: readonly number[]) => void },
): { stop: () => void } {
  const mirrors = bucketMirrors(redis);
  const holds = new Map<number, number>();
  const shards = shardsOf(redis);
  let change = 0;
  let closing = false;
  let stopped = false;
  // One line per outage, not one per retry.
  let failing = false;

  const closeHeld = async (): Promise<void> => {
    if (closing) return;
    closing = true;
    try {
      while (holds.size > 0 && !stopped && redis.status !== 'end') {
        const batch = [...holds];
        const results = await Promise.allSettled(batch.map(([bucket]) => mirrors[bucket]?.markNotReady()));
        const closed = batch.filter(([bucket, heldAt], i) => {
          // A bucket held again meanwhile (another change) needs a close of its own.
          if (results[i]?.status !== 'fulfilled' || holds.get(bucket) !== heldAt) return false;
          holds.delete(bucket);
          return true;
        });
        if (stopped) return;
        const failure = results.find((result) => result.status === 'rejected');
        if (failure !== undefined && !failing) options.logger.debug({ err: failure.reason }, 'could not close the revocation mirror of a lost or replaced shard yet; trying again');
        failing = failure !== undefined;
        if (closed.length > 0) options.closed?.(closed.map(([bucket]) => bucket));
        if (failure !== undefined) await new Promise((resolve) => setTimeout(resolve, CLOSE_RETRY_MS).unref());
      }
    } finally {
      closing = false;
    }
  };

  const guard = {
    holds,
    hold: (buckets: readonly number[]) => {
      change += 1;
      for (const bucket of buckets) holds.set(bucket, change);
      void closeHeld();
    },
  };
  shards.guards.add(guard);
  return {
    stop: () => {
      stopped = true;
      shards.guards.delete(guard);
    },
  };
}

/**
 * `mirror_state(key, now)` (lua/mirror-state.lua), for a script of another module that must tell a lost
 * Redis in its own round trip (the gateway's admission): put it first in that script.
 */
export const MIRROR_STATE_LUA = luaFile('mirror-state');
