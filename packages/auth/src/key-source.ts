import { type JsonWebKey, type KeyObject, createPublicKey } from 'node:crypto';
import { ServiceUnavailableError } from '@platform/errors';

/** Looks up the public key that verifies tokens with a given `kid`. */
export interface KeySource {
  /** The key, or undefined when no key has that id. Rejects (503) when keys cannot be had at all. */
  get(kid: string): Promise<KeyObject | undefined>;
}

/** A JSON Web Key Set as served at `/.well-known/jwks.json`. */
export interface Jwks {
  keys: Array<JsonWebKey & { kid?: string }>;
}

/** Keys known in-process (the identity service verifies with its own keys). */
export function staticKeySource(keys: ReadonlyMap<string, KeyObject>): KeySource {
  return { get: async (kid) => keys.get(kid) };
}

/**
 * Turns a JWKS into key objects, once: parsing a key per verification costs ~50x the verification.
 * Entries without a `kid`, or that are not EC/RSA public keys, are skipped.
 */
export function keysFromJwks(jwks: Jwks): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const jwk of Array.isArray(jwks.keys) ? jwks.keys : []) {
    if (typeof jwk.kid !== 'string' || (jwk.kty !== 'EC' && jwk.kty !== 'RSA')) continue;
    try {
      const { d: _private, ...publicPart } = jwk;
      keys.set(jwk.kid, createPublicKey({ key: publicPart, format: 'jwk' }));
    } catch {
      // A malformed entry must not hide the good ones.
    }
  }
  return keys;
}

export interface JwksKeySourceOptions {
  /** Where the issuer publishes its keys, e.g. http://identity:8081/.well-known/jwks.json */
  url: string;
  /** Longest wait for the JWKS endpoint. */
  timeoutMs?: number;
  /** Keys older than this are fetched again in the background. */
  maxAgeMs?: number;
  /** An unknown `kid` triggers a fetch at most this often, so forged kids cannot hammer the issuer. */
  minRefreshIntervalMs?: number;
  /** Told about failed fetches. */
  onError?: (err: unknown) => void;
}

/**
 * Keys fetched from a JWKS URL and cached: refreshed when they age, and at once (rate-limited) when a token
 * names a `kid` the cache does not have, so a key rotation at the issuer is picked up without a restart.
 * Only one fetch runs at a time. When the issuer is unreachable the cached keys keep working.
 */
export function jwksKeySource(options: JwksKeySourceOptions): KeySource {
  const timeoutMs = options.timeoutMs ?? 2000;
  const maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
  const minRefreshIntervalMs = options.minRefreshIntervalMs ?? 30_000;
  let keys: Map<string, KeyObject> | undefined;
  let fetchedAt = 0;
  let attemptedAt = 0;
  let inFlight: Promise<void> | undefined;

  const load = async (): Promise<void> => {
    attemptedAt = Date.now();
    try {
      const response = await fetch(options.url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
      if (!response.ok) {
        await response.body?.cancel();
        throw new Error(`JWKS endpoint answered ${response.status}`);
      }
      const body = (await response.json()) as unknown;
      // An answer that is not a key set counts as a failed fetch: it must not wipe the cached keys.
      if (typeof body !== 'object' || body === null || !Array.isArray((body as Partial<Jwks>).keys)) {
        throw new Error('JWKS endpoint answered something that is not a key set');
      }
      keys = keysFromJwks(body as Jwks);
      fetchedAt = Date.now();
    } catch (err) {
      options.onError?.(err);
    }
  };

  // Cleared in `.finally`, never inside `load`: a load that settles synchronously would clear the slot before it is set.
  const refresh = (): Promise<void> => {
    inFlight ??= load().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  return {
    async get(kid) {
      const now = Date.now();
      if (keys === undefined) {
        await refresh();
      } else if (!keys.has(kid)) {
        // A fetch already running (another request with the new kid) may bring it: wait for it, start none.
        if (inFlight !== undefined) await inFlight;
        else if (now - attemptedAt >= minRefreshIntervalMs) await refresh();
      } else if (now - fetchedAt >= maxAgeMs && now - attemptedAt >= minRefreshIntervalMs) {
        void refresh();
      }
      if (keys === undefined) throw new ServiceUnavailableError('Token verification keys are unavailable');
      return keys.get(kid);
    },
  };
}
