import { MIRROR_STATE_LUA, REVOCATION_MIRROR_KEY, STAMP_LUA, STAMP_TTL_MS, type WriteStamp, revocationKeys, writeStamp } from '@platform/auth';
import type { Redis } from '@platform/service-kit';
import { luaFile } from './lua.ts';

/**
 * The one Redis round trip of a signed request (README, "What one request costs in Redis"): Redis's past,
 * the replay, the rate window, the nonce, the idempotency key and the token's revocation, as named Lua
 * functions in one script (lua/admit.lua is their order). On a Redis Cluster the per-client-key functions
 * (rate_window, nonce_*, idempotency_claim, replay_store_loss) and the per-session one (token_revoked with
 * mirror_state) can be split by slot into two scripts; on one Redis they run as one.
 */
const ADMIT_SCRIPT = [
  `local STAMP_TTL_MS = ${STAMP_TTL_MS}`,
  MIRROR_STATE_LUA,
  STAMP_LUA,
  luaFile('admission/lua/replay-store-loss.lua'),
  luaFile('rate-limit/lua/rate-window.lua'),
  luaFile('idempotency/lua/nonce.lua'),
  luaFile('idempotency/lua/idempotency-key.lua'),
  luaFile('bearer/lua/revocation.lua'),
  luaFile('admission/lua/admit.lua'),
].join('\n');

/** The first check that refused the request, or `claimed`: the outcome names lua/admit.lua returns. */
export const ADMISSION_OUTCOMES = [
  'claimed',
  'nonce-reused',
  'key-reused',
  'token-revoked',
  'rate-limited',
  'signed-before-loss',
  'revocations-restoring',
  'signed-in-loss-second',
] as const;
export type AdmissionOutcome = (typeof ADMISSION_OUTCOMES)[number];

/** The script's keys by name, in the order of its `key` table (KEYS[1..]). */
interface AdmissionKeys {
  rate: string;
  nonce: string;
  idempotency: string;
  mirror: string;
  stamp: string;
  token?: string;
  session?: string;
}
export const ADMISSION_KEYS = ['rate', 'nonce', 'idempotency', 'mirror', 'stamp', 'token', 'session'] as const satisfies ReadonlyArray<keyof AdmissionKeys>;

/** The script's arguments by name, in the order of its `arg` table (ARGV[1..]). */
interface AdmissionArgs {
  nonce_ttl_ms: number;
  key_ttl_ms: number;
  /** Written into the claimed keys, so only this request can release its idempotency key. */
  owner: string;
  /** 0: count nothing. */
  limit: number;
  /** A sub-window of the rate window (windowS × 1000 / RATE_BUCKETS). */
  width_ms: number;
  /** The signature's `created` (Unix seconds). */
  created: number;
  /** This process's clock (ms): the `born` of a mirror found missing. */
  now: number;
  bearing: boolean;
  stamp_seen: string;
  stamp_last: string;
}
export const ADMISSION_ARGS = [
  'nonce_ttl_ms',
  'key_ttl_ms',
  'owner',
  'limit',
  'width_ms',
  'created',
  'now',
  'bearing',
  'stamp_seen',
  'stamp_last',
] as const satisfies ReadonlyArray<keyof AdmissionArgs>;

/** Sub-windows of a rate-limit window: the sliding window's resolution (rate-limit/lua/rate-window.lua's BUCKETS). */
export const RATE_BUCKETS = 10;

/** What the round trip found: the first check that failed (or none), and the key's quota when it has a limit. */
export interface Admission {
  outcome: AdmissionOutcome;
  /** Requests left and ms until the next one frees (`rate-limited`: until one fits); undefined without a limit. */
  quota: { remaining: number; resetMs: number } | undefined;
}

export interface AdmissionRequest {
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

/** Nonces, idempotency keys and quotas, scoped by client key id. */
export interface AdmissionStore {
  /** One round trip: Redis's past, the rate window, the nonce, the idempotency key, the revocation. Rejects when Redis is unreachable. */
  admit(request: AdmissionRequest): Promise<Admission>;
  /** Frees an idempotency key after a 5xx or no answer, so the client may retry with it. */
  release(request: Pick<AdmissionRequest, 'keyId' | 'idempotencyKey' | 'owner'>): Promise<void>;
  /**
   * This gateway's nonce writes as Redis counts them: `check()` finds a Redis that went back in time
   * without a request (after a reconnect, and now and then).
   */
  readonly stamp: WriteStamp;
}

export interface AdmissionOptions {
  /** How long a nonce is remembered: twice the signature skew window (CONTRACT.md part 2). */
  nonceTtlS: number;
  /** Idempotency key memory for GET and HEAD. */
  safeTtlS: number;
  /** Idempotency key memory for every other method. */
  unsafeTtlS: number;
}

/** The two scripts as ioredis defines them (EVALSHA, falling back to EVAL once per connection). */
interface AdmissionCommands {
  gatewayAdmit(numKeys: number, ...keysAndArgs: string[]): Promise<[string, number, number, number]>;
  gatewayRelease(key: string, owner: string): Promise<number>;
}

const SAFE_METHODS = new Set(['GET', 'HEAD']);
const OUTCOMES = new Set<string>(ADMISSION_OUTCOMES);

// Key ids may contain ':'; encoding it keeps `a` + `b:c` and `a:b` + `c` from naming the same key.
const scope = (keyId: string): string => keyId.replaceAll('%', '%25').replaceAll(':', '%3A');

/** The Redis key (below REDIS_KEY_PREFIX) remembering a nonce. */
export const nonceKey = (keyId: string, nonce: string): string => `gateway:nonce:${scope(keyId)}:${nonce}`;
/** The Redis key (below REDIS_KEY_PREFIX) counting a key's requests; the window is in it, so a new window starts afresh. */
export const rateKey = (keyId: string, windowS: number): string => `gateway:rate:${scope(keyId)}:${windowS}`;
/** The Redis key (below REDIS_KEY_PREFIX) remembering an idempotency key. */
export const idempotencyRedisKey = (keyId: string, key: string): string => `gateway:idem:${scope(keyId)}:${key}`;

function scriptArgs(args: AdmissionArgs): string[] {
  return ADMISSION_ARGS.map((name) => {
    const value = args[name];
    return typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
  });
}

/** The admission store over the gateway's Redis client (whose keyPrefix ioredis also applies to script keys). */
export function createAdmissionStore(redis: Redis, options: AdmissionOptions): AdmissionStore {
  redis.defineCommand('gatewayAdmit', { lua: ADMIT_SCRIPT });
  redis.defineCommand('gatewayRelease', { numberOfKeys: 1, lua: luaFile('idempotency/lua/release.lua') });
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  const commands = redis as unknown as AdmissionCommands;
  const stamp = writeStamp(redis, 'gateway');
  return {
    stamp,
    async admit(request) {
      const { rate } = request;
      const [token, session] = request.token === undefined ? [] : revocationKeys(request.token);
      const named: AdmissionKeys = {
        rate: rateKey(request.keyId, rate?.windowS ?? 0),
        nonce: nonceKey(request.keyId, request.nonce),
        idempotency: idempotencyRedisKey(request.keyId, request.idempotencyKey),
        mirror: REVOCATION_MIRROR_KEY,
        stamp: stamp.key,
        token,
        session,
      };
      const keys = ADMISSION_KEYS.map((name) => named[name]).filter((key) => key !== undefined);
      const args = scriptArgs({
        nonce_ttl_ms: options.nonceTtlS * 1000,
        key_ttl_ms: (SAFE_METHODS.has(request.method) ? options.safeTtlS : options.unsafeTtlS) * 1000,
        owner: request.owner,
        limit: rate?.limit ?? 0,
        // Sub-windows of whole milliseconds.
        width_ms: rate === undefined ? 0 : (rate.windowS * 1000) / RATE_BUCKETS,
        created: request.created,
        now: Date.now(),
        bearing: request.bearing,
        stamp_seen: stamp.seen(),
        stamp_last: stamp.lastWrite(),
      });
      const [outcome, remaining, waitMs, count] = await commands.gatewayAdmit(keys.length, ...keys, ...args);
      stamp.observe(Number(count));
      if (!OUTCOMES.has(outcome)) throw new Error(`unexpected admission script result ${String(outcome)}`);
      return { outcome: outcome as AdmissionOutcome, quota: rate === undefined ? undefined : { remaining: Number(remaining), resetMs: Number(waitMs) } };
    },
    async release(request) {
      await commands.gatewayRelease(idempotencyRedisKey(request.keyId, request.idempotencyKey), request.owner);
    },
  };
}
