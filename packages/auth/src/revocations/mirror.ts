import type { RedisClient as Redis } from './redis-client.ts';
import { ALL_REVOCATION_BUCKETS, revocationMirrorKey } from './buckets.ts';
import { luaFile, luaScript } from './lua.ts';

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
  revocationMirrorNotReady(key: string, now: string): Promise<number>;
  revocationMirrorReady(key: string, born: string): Promise<number>;
}

/** The mirror's state as identity's keeper reads and changes it. */
export interface RevocationMirror {
  /** Whether the mirror is whole, and since when this Redis has it; a missing mirror is created not ready. */
  state(): Promise<{ born: number; ready: boolean }>;
  /** Fails every bearer request closed until `markReady` (a revocation may be missing from Redis); returns `born`. */
  markNotReady(): Promise<number>;
  /** Opens again after a re-seed of the mirror born at `born`; false when Redis lost it meanwhile (re-seed again). */
  markReady(born: number): Promise<boolean>;
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
      const [born, ready] = String(await commands.revocationMirrorState(key, String(Date.now()))).split(':');
      return { born: Number(born), ready: ready === '1' };
    },
    async markNotReady() {
      return Number(await commands.revocationMirrorNotReady(key, String(Date.now())));
    },
    async markReady(born) {
      return Number(await commands.revocationMirrorReady(key, String(born))) === 1;
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
 * Calls `handler` each time `redis` connects again after having been connected (not on the first
 * connection). `stop` removes the listener.
 */
export function onReconnect(redis: Redis, handler: () => void): { stop: () => void } {
  let connected = redis.status === 'ready';
  const listener = (): void => {
    if (connected) handler();
    connected = true;
  };
  redis.on('ready', listener);
  return { stop: () => void redis.off('ready', listener) };
}

/**
 * For the processes that check tokens against the mirror (the gateway, risk): a reconnect may be a
 * failover to a replica that lagged, which kept the mirror's hash but not the revocations written just
 * before, and identity (their writer) may not have noticed yet (it finds out on its own reconnect or
 * check). So the process that reconnects closes the mirror (not ready; its birth kept, since no nonce of
 * this process is known lost) and bearer requests wait, everywhere, until identity has re-seeded it from
 * Postgres: about a second. The price of a mere network blip is the same second of 503s.
 */
export function closeMirrorOnReconnect(redis: Redis, onError: (err: unknown) => void): { stop: () => void } {
  const closeAll = mirrorCloser(redis);
  return onReconnect(redis, () => {
    closeAll().catch(onError);
  });
}

/**
 * `mirror_state(key, now)` (lua/mirror-state.lua), for a script of another module that must tell a lost
 * Redis in its own round trip (the gateway's admission): put it first in that script.
 */
export const MIRROR_STATE_LUA = luaFile('mirror-state');
