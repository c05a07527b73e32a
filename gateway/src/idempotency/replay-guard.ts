import { revocationKeys } from '@platform/auth';
import type { Redis } from '@platform/service-kit';

/**
 * One round trip for every Redis check of a request, in CONTRACT.md part 3 order. Each claim is a
 * `SET NX PX`, so under concurrency exactly one request wins a nonce or an idempotency key.
 * - A nonce, once seen, stays burnt whatever happens next: a replay must never pass.
 * - The idempotency key is claimed only when the nonce was fresh, and stays claimed when the token
 *   turns out revoked (a 401 is not a 5xx; CONTRACT.md: "every other outcome keeps it").
 * - KEYS[3..], the bearer token's revocation keys (its own blacklist entry and its session's), are
 *   only read. Returns 0 (claimed), 1 (nonce reused), 2 (idempotency key reused) or 3 (token revoked).
 */
const CLAIM_SCRIPT = `
if not redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[1]) then return 1 end
if not redis.call('SET', KEYS[2], ARGV[3], 'NX', 'PX', ARGV[2]) then return 2 end
if #KEYS > 2 and redis.call('EXISTS', unpack(KEYS, 3)) > 0 then return 3 end
return 0
`;

/** Deletes an idempotency key only while it still belongs to the request that claimed it. */
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** The two scripts as ioredis defines them (EVALSHA, falling back to EVAL once per connection). */
interface GuardCommands {
  gatewayClaim(numKeys: number, ...keysAndArgs: string[]): Promise<number>;
  gatewayRelease(key: string, owner: string): Promise<number>;
}

export type ClaimOutcome = 'claimed' | 'nonce-reused' | 'key-reused' | 'token-revoked';
const OUTCOMES: readonly ClaimOutcome[] = ['claimed', 'nonce-reused', 'key-reused', 'token-revoked'];

export interface ClaimRequest {
  keyId: string;
  nonce: string;
  idempotencyKey: string;
  method: string;
  /** The bearer token (`jti` and `sid`), when the route needs one and it verified. */
  token: { tokenId: string; sessionId: string } | undefined;
  /** Written into the claimed keys, so only this request can release its idempotency key. */
  owner: string;
}

/** Nonce and idempotency-key memory, scoped by client key id. */
export interface ReplayGuard {
  /** Claims the nonce and the idempotency key and reads the blacklist. Rejects when Redis is unreachable. */
  claim(request: ClaimRequest): Promise<ClaimOutcome>;
  /** Frees an idempotency key after a 5xx, so the client may retry with it. */
  release(request: Pick<ClaimRequest, 'keyId' | 'idempotencyKey' | 'owner'>): Promise<void>;
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
/** The Redis key (below REDIS_KEY_PREFIX) remembering an idempotency key. */
export const idempotencyRedisKey = (keyId: string, key: string): string => `gateway:idem:${scope(keyId)}:${key}`;

/** The guard over the gateway's Redis client (whose keyPrefix ioredis also applies to script keys). */
export function createReplayGuard(redis: Redis, options: ReplayGuardOptions): ReplayGuard {
  redis.defineCommand('gatewayClaim', { lua: CLAIM_SCRIPT });
  redis.defineCommand('gatewayRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  // defineCommand adds methods TypeScript cannot see; this is their exact shape.
  const commands = redis as unknown as GuardCommands;
  return {
    async claim(request) {
      const keys = [nonceKey(request.keyId, request.nonce), idempotencyRedisKey(request.keyId, request.idempotencyKey)];
      if (request.token !== undefined) keys.push(...revocationKeys(request.token));
      const ttlS = SAFE_METHODS.has(request.method) ? options.safeTtlS : options.unsafeTtlS;
      const result = await commands.gatewayClaim(keys.length, ...keys, String(options.nonceTtlS * 1000), String(ttlS * 1000), request.owner);
      const outcome = OUTCOMES[result];
      if (outcome === undefined) throw new Error(`unexpected claim script result ${result}`);
      return outcome;
    },
    async release(request) {
      await commands.gatewayRelease(idempotencyRedisKey(request.keyId, request.idempotencyKey), request.owner);
    },
  };
}
