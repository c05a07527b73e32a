import { MIRROR_STATE_LUA, REVOCATION_MIRROR_KEY, STAMP_LUA, STAMP_TTL_MS, type WriteStamp, revocationKeys, writeStamp } from '@platform/auth';
import type { Redis } from '@platform/service-kit';

/** Sub-windows of a rate-limit window: the sliding window's resolution (and the bound of its error). */
export const RATE_BUCKETS = 10;

/**
 * One round trip for every Redis check of a request, in CONTRACT.md part 3, 12 and 13 order, but that a
 * replay is told apart before the quota is spent.
 * - First what Redis knows of its own past (KEYS[4], the revocation mirror, created not ready when it is
 *   missing: Redis lost its data; KEYS[5], this gateway's write stamp, ARGV[9] the highest count it has
 *   read back and ARGV[10] when: less in Redis means Redis went back in time, a lagging replica promoted,
 *   and the mirror is marked lost now unless a loss after that write was marked already). A signature created before the loss (ARGV[6], Unix seconds: its whole
 *   second over by the mirror's `born`, in ms) is refused, since the nonces it could replay against are gone;
 *   one created in the very second of the loss cannot be told apart from it (seconds against milliseconds)
 *   and is asked to sign again (a 503 with Retry-After, CONTRACT.md part 13); and while the
 *   mirror is not re-seeded, a request that carries or needs a token (ARGV[8] = 1) is refused, since a
 *   revocation may be missing. Neither spends quota nor claims anything; like an unreachable Redis, they
 *   answer with no quota left and a second to wait, the window not having been read.
 * - A replay (KEYS[2], its nonce, already seen) is told apart before anything is counted: whoever captured
 *   a signed request must not spend its key's quota by sending it again. It reads the window (for the
 *   RateLimit fields of its 409) but writes nothing, over the limit or not.
 * - The rate limit (KEYS[1], skipped when ARGV[4] is 0): a sliding window of RATE_BUCKETS + 1
 *   sub-windows of windowS / RATE_BUCKETS each, counted in one hash per key, on Redis's own clock (one
 *   clock for every gateway replica). A request is admitted while the sub-windows that overlap the last
 *   windowS seconds hold fewer than `limit` requests; they cover windowS plus at most one sub-window, so
 *   no S-second span ever admits more than the limit, and a client that keeps asking gets at least
 *   limit × RATE_BUCKETS / (RATE_BUCKETS + 1) per window (−9% at 10). A refused request returns before
 *   anything else is written: its nonce stays fresh and its idempotency key unclaimed.
 * - Each claim is a `SET NX PX`, so under concurrency exactly one request wins a nonce or an idempotency key
 *   (the script runs whole, so nothing comes between the replay's read and the claim). A nonce, once seen,
 *   stays burnt whatever happens next: a replay must never pass. Each nonce written counts on the write
 *   stamp, in the same step.
 * - The idempotency key is claimed only when the nonce was fresh, and stays claimed when the token
 *   turns out revoked (a 401 is not a 5xx; CONTRACT.md: "every other outcome keeps it").
 * - KEYS[6..], the bearer token's revocation keys (its own blacklist entry and its session's), are
 *   only read.
 * Returns { outcome, remaining, ms, stamp }: outcome 0 (claimed), 1 (nonce reused), 2 (idempotency key
 * reused), 3 (token revoked), 4 (rate limited), 5 (signed before Redis lost its data), 6 (revocations not
 * re-seeded) or 7 (signed in the second Redis lost its data); `remaining` the requests left in the window (-1 without a limit); `ms` until the next request
 * fits (when limited) or until the oldest counted one leaves; `stamp` the write stamp's count after a nonce
 * was written, else 0.
 */
const CLAIM_SCRIPT = `${MIRROR_STATE_LUA}${STAMP_LUA}
stamp_check(KEYS[4], KEYS[5], ARGV[9], ARGV[10], ARGV[7], ${STAMP_TTL_MS})
local born, whole = mirror_state(KEYS[4], ARGV[7])
local loss, created = tonumber(born) / 1000, tonumber(ARGV[6])
if created + 1 <= loss then return {5, 0, 1000, 0} end
if created < loss then return {7, 0, 1000, 0} end
if not whole and ARGV[8] == '1' then return {6, 0, 1000, 0} end
local replayed = redis.call('EXISTS', KEYS[2]) == 1
local limit = tonumber(ARGV[4])
local remaining, wait = -1, 0
if limit > 0 then
  local width = tonumber(ARGV[5])
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local current = math.floor(now / width)
  local oldest = current - ${RATE_BUCKETS}
  local fields = {}
  for i = 0, ${RATE_BUCKETS} do fields[i + 1] = oldest + i end
  local counts = redis.call('HMGET', KEYS[1], unpack(fields))
  local used = 0
  for i = 1, ${RATE_BUCKETS + 1} do
    counts[i] = tonumber(counts[i]) or 0
    used = used + counts[i]
  end
  local first = 1
  if used >= limit then
    -- The first sub-window whose leaving makes room; it leaves when ${RATE_BUCKETS} + 1 more have begun.
    local left = used
    while first < ${RATE_BUCKETS + 1} do
      left = left - counts[first]
      if left < limit then break end
      first = first + 1
    end
    return {replayed and 1 or 4, 0, (oldest + first - 1 + ${RATE_BUCKETS + 1}) * width - now, 0}
  end
  if not replayed then
    redis.call('HINCRBY', KEYS[1], current, 1)
    redis.call('PEXPIRE', KEYS[1], ${RATE_BUCKETS + 1} * width)
    -- Sub-windows that left the window are deleted when a new one begins (rarely: once per sub-window).
    if redis.call('HLEN', KEYS[1]) > ${RATE_BUCKETS + 1} then
      for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
        if tonumber(field) < oldest then redis.call('HDEL', KEYS[1], field) end
      end
    end
    used = used + 1
  end
  remaining = limit - used
  while first < ${RATE_BUCKETS + 1} and counts[first] == 0 do first = first + 1 end
  wait = (oldest + first - 1 + ${RATE_BUCKETS + 1}) * width - now
end
if replayed or not redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[1]) then return {1, remaining, wait, 0} end
local stamp = redis.call('INCR', KEYS[5])
if stamp == 1 then redis.call('PEXPIRE', KEYS[5], ${STAMP_TTL_MS}) end
if not redis.call('SET', KEYS[3], ARGV[3], 'NX', 'PX', ARGV[2]) then return {2, remaining, wait, stamp} end
if #KEYS > 5 and redis.call('EXISTS', unpack(KEYS, 6)) > 0 then return {3, remaining, wait, stamp} end
return {0, remaining, wait, stamp}
`;

/** Deletes an idempotency key only while it still belongs to the request that claimed it. */
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** The two scripts as ioredis defines them (EVALSHA, falling back to EVAL once per connection). */
interface GuardCommands {
  gatewayClaim(numKeys: number, ...keysAndArgs: string[]): Promise<[number, number, number, number]>;
  gatewayRelease(key: string, owner: string): Promise<number>;
}

export type ClaimOutcome =
  | 'claimed'
  | 'nonce-reused'
  | 'key-reused'
  | 'token-revoked'
  | 'rate-limited'
  | 'signed-before-loss'
  | 'revocations-restoring'
  | 'signed-in-loss-second';
const OUTCOMES: readonly ClaimOutcome[] = [
  'claimed',
  'nonce-reused',
  'key-reused',
  'token-revoked',
  'rate-limited',
  'signed-before-loss',
  'revocations-restoring',
  'signed-in-loss-second',
];

/** What the round trip found: the first check that failed (or none), and the key's quota when it has a limit. */
export interface Claim {
  outcome: ClaimOutcome;
  /** Requests left and ms until the next one frees (`rate-limited`: until one fits); undefined without a limit. */
  quota: { remaining: number; resetMs: number } | undefined;
}

export interface ClaimRequest {
  keyId: string;
  nonce: string;
  idempotencyKey: string;
  method: string;
  /** The bearer token (`jti` and `sid`), when the route needs one and it verified. */
  token: { tokenId: string; sessionId: string } | undefined;
  /** The request carries or needs a bearer token: refused while the revocation mirror is not whole. */
  bearing: boolean;
  /** The signature's `created` (Unix seconds). */
  created: number;
  /** Written into the claimed keys, so only this request can release its idempotency key. */
  owner: string;
  /** The key's rate limit (CONTRACT.md part 12); undefined counts nothing (a baseline for the benchmark). */
  rate: { limit: number; windowS: number } | undefined;
}

/** Nonce and idempotency-key memory, scoped by client key id. */
export interface ReplayGuard {
  /** Counts the request against its rate limit (unless its nonce was seen), claims the nonce and the idempotency key, reads the blacklist. Rejects when Redis is unreachable. */
  claim(request: ClaimRequest): Promise<Claim>;
  /** Frees an idempotency key after a 5xx, so the client may retry with it. */
  release(request: Pick<ClaimRequest, 'keyId' | 'idempotencyKey' | 'owner'>): Promise<void>;
  /**
   * This gateway's nonce writes as Redis counts them: `check()` finds a Redis that went back in time
   * without a claim (after a reconnect, and now and then), so the loss is marked before another replica
   * could be handed a replay of a nonce this one wrote.
   */
  readonly stamp: WriteStamp;
}

export interface ReplayGuardOptions {
  /** How long a nonce is remembered: twice the signature skew window (CONTRACT.md part 2). */
  nonceTtlS: number;
  /** Idempotency key memory for GET and HEAD. */
  safeTtlS: number;
  /** Idempotency key memory for every other method. */
  unsafeTtlS: number;
}

const SAFE_METHODS = new Set(['GET', 'HEAD']);

// Key ids may contain ':'; encoding it keeps `a` + `b:c` and `a:b` + `c` from naming the same key.
const scope = (keyId: string): string => keyId.replaceAll('%', '%25').replaceAll(':', '%3A');

/** The Redis key (below REDIS_KEY_PREFIX) remembering a nonce. */
export const nonceKey = (keyId: string, nonce: string): string => `gateway:nonce:${scope(keyId)}:${nonce}`;
/** The Redis key (below REDIS_KEY_PREFIX) counting a key's requests; the window is in it, so a new window starts afresh. */
export const rateKey = (keyId: string, windowS: number): string => `gateway:rate:${scope(keyId)}:${windowS}`;
/** The Redis key (below REDIS_KEY_PREFIX) remembering an idempotency key. */
export const idempotencyRedisKey = (keyId: string, key: string): string => `gateway:idem:${scope(keyId)}:${key}`;

/** The guard over the gateway's Redis client (whose keyPrefix ioredis also applies to script keys). */
export function createReplayGuard(redis: Redis, options: ReplayGuardOptions): ReplayGuard {
  redis.defineCommand('gatewayClaim', { lua: CLAIM_SCRIPT });
  redis.defineCommand('gatewayRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  const commands = redis as unknown as GuardCommands;
  const stamp = writeStamp(redis, 'gateway');
  return {
    stamp,
    async claim(request) {
      const { rate } = request;
      const keys = [
        rateKey(request.keyId, rate?.windowS ?? 0),
        nonceKey(request.keyId, request.nonce),
        idempotencyRedisKey(request.keyId, request.idempotencyKey),
        REVOCATION_MIRROR_KEY,
        stamp.key,
      ];
      if (request.token !== undefined) keys.push(...revocationKeys(request.token));
      const ttlS = SAFE_METHODS.has(request.method) ? options.safeTtlS : options.unsafeTtlS;
      // Sub-windows of whole milliseconds: windowS × 1000 / RATE_BUCKETS.
      const width = rate === undefined ? 0 : (rate.windowS * 1000) / RATE_BUCKETS;
      const [code, remaining, ms, count] = await commands.gatewayClaim(
        keys.length,
        ...keys,
        String(options.nonceTtlS * 1000),
        String(ttlS * 1000),
        request.owner,
        String(rate?.limit ?? 0),
        String(width),
        String(request.created),
        String(Date.now()),
        request.bearing ? '1' : '0',
        stamp.seen(),
        stamp.lastWrite(),
      );
      stamp.observe(Number(count));
      const outcome = OUTCOMES[code];
      if (outcome === undefined) throw new Error(`unexpected claim script result ${code}`);
      return { outcome, quota: rate === undefined ? undefined : { remaining: Number(remaining), resetMs: Number(ms) } };
    },
    async release(request) {
      await commands.gatewayRelease(idempotencyRedisKey(request.keyId, request.idempotencyKey), request.owner);
    },
  };
}
