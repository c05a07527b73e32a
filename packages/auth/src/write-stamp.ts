import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { REVOCATION_MIRROR_KEY } from './revocation-mirror.ts';

/**
 * How long a writer's stamp outlives its last write or check: a process checks its own every
 * STAMP_CHECK_MS at least, so only stamps of processes long gone expire.
 */
export const STAMP_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A Lua function every script that writes something the platform must not lose starts with (the
 * gateway's nonces, identity's revocations). A writer's stamp counts its writes (`INCR` in the same
 * atomic step as each write); the writer remembers the highest count Redis answered (`seen`). A Redis
 * holding less than that went back in time: it is a replica that lagged and was promoted, or a restart
 * from an old snapshot, and some of those writes are gone although the mirror's hash survived. Then the
 * mirror is marked as lost now (born = now, not ready), just as when the hash itself is missing, unless
 * a loss was marked after the writer's last write (`last`, ms) already: another process found the same
 * loss first, and marking it again would only close the mirror a second time. Either way the stamp is
 * put back to `seen`, so the same loss is not found again.
 */
export const STAMP_LUA = `
local function stamp_check(mirror_key, stamp_key, seen, last, now)
  local held = tonumber(redis.call('GET', stamp_key) or '0') or 0
  if held >= tonumber(seen) then return false end
  redis.call('SET', stamp_key, seen, 'PX', ${STAMP_TTL_MS})
  local born = tonumber(redis.call('HGET', mirror_key, 'born') or '0') or 0
  if born >= tonumber(last) then return false end
  redis.call('HSET', mirror_key, 'born', now)
  redis.call('HSET', mirror_key, 'ready', '0')
  return true
end
`;

/** Checks the stamp (a loss marks the mirror lost) and refreshes its lifetime; returns 1 when Redis went back. */
const CHECK_SCRIPT = `${STAMP_LUA}
local lost = stamp_check(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ${STAMP_TTL_MS})
if lost then return 1 end
return 0
`;

interface StampCommands {
  writeStampCheck(mirrorKey: string, stampKey: string, seen: string, last: string, now: string): Promise<number>;
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
  redis.defineCommand('writeStampCheck', { numberOfKeys: 2, lua: CHECK_SCRIPT });
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
      return Number(await commands.writeStampCheck(REVOCATION_MIRROR_KEY, key, String(seen), String(last), String(Date.now()))) === 1;
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
