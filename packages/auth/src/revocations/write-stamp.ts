import { randomUUID } from 'node:crypto';
import type { RedisClient as Redis } from './redis-client.ts';
import { luaFile, luaScript } from './lua.ts';
import { REVOCATION_MIRROR_KEY } from './mirror.ts';

/**
 * How long a writer's stamp outlives its last write or check: a process checks its own every
 * STAMP_CHECK_MS at least, so only stamps of processes long gone expire.
 */
export const STAMP_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * `stamp_check(mirror_key, stamp_key, seen, last, now, ttl_ms)` (lua/stamp-check.lua), for a script of
 * another module whose writes count on a stamp (the gateway's nonces): put it first in that script.
 */
export const STAMP_LUA = luaFile('stamp-check');

interface StampCommands {
  writeStampCheck(mirrorKey: string, stampKey: string, seen: string, last: string, now: string, ttlMs: string): Promise<number>;
}

/** One process's count of its writes that must survive, and what it last read back of it. */
export interface WriteStamp {
  /** The stamp's Redis key (below the client's prefix), unique to this process. */
  readonly key: string;
  /** The highest count Redis answered, as a script argument. */
  seen(): string;
  /** When (ms, this process's clock) Redis answered it, as a script argument. */
  lastWrite(): string;
  /** Takes a count Redis answered after a write. */
  observe(count: number): void;
  /**
   * Compares the count in Redis with `seen`: when Redis holds less, marks the revocation mirror lost
   * (CONTRACT.md part 13) and resolves true. Also keeps the stamp from expiring. Rejects when Redis is
   * unreachable.
   */
  check(): Promise<boolean>;
}

/** A new stamp for a writer (`gateway`, `identity`) on `redis`, whose key prefix is the environment's. */
export function writeStamp(redis: Redis, writer: string): WriteStamp {
  redis.defineCommand('writeStampCheck', { numberOfKeys: 2, lua: luaScript('stamp-check', 'stamp-watch') });
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  const commands = redis as unknown as StampCommands;
  const key = `auth:stamp:${writer}:${randomUUID()}`;
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
    async check() {
      return Number(await commands.writeStampCheck(REVOCATION_MIRROR_KEY, key, String(seen), String(last), String(Date.now()), String(STAMP_TTL_MS))) === 1;
    },
  };
}

/** How often a writer checks its stamp when nothing else did: it also keeps the stamp from expiring. */
const STAMP_CHECK_MS = 60_000;

/**
 * Checks `stamp` whenever `redis` is (re)connected (a failover to a replica always reconnects) and every
 * `intervalMs`; `onLoss` hears of a Redis that went back in time. Errors (Redis unreachable) are the
 * caller's to log: the next reconnect checks again. `stop` removes the timer and the listener.
 */
export function watchWriteStamp(
  redis: Redis,
  stamp: WriteStamp,
  options: { intervalMs?: number; onLoss: () => void; onError: (err: unknown) => void },
): { stop: () => void } {
  const check = (): void => {
    stamp.check().then((lost) => {
      if (lost) options.onLoss();
    }, options.onError);
  };
  redis.on('ready', check);
  const timer = setInterval(check, options.intervalMs ?? STAMP_CHECK_MS);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      redis.off('ready', check);
    },
  };
}
