import { type JsonWebKey, type KeyObject, createPublicKey } from 'node:crypto';
import { ServiceUnavailableError } from '@platform/errors';
import { periodic } from '@platform/service-kit';
import { algorithmOf } from './key-algorithm.ts';

/** Looks up the public key that verifies tokens with a given `kid`. */
export interface KeySource {
  /** The key, or undefined when no key has that id. Rejects (503) when keys cannot be had at all. */
  get(kid: string): Promise<KeyObject | undefined>;
  /** The key held now under that id, without fetching or waiting; undefined when none is held (yet). */
  peek?(kid: string): KeyObject | undefined;
}

/** A JSON Web Key Set as served at `/.well-known/jwks.json`. */
export interface Jwks {
  keys: Array<JsonWebKey & { kid?: string }>;
}

/**
 * The JWKS that publishes `keys` (public halves only, whatever was passed), in their order: each with its
 * `kid`, the one algorithm it verifies (`algorithmOf`) and `use: sig`. A key with no such algorithm is left
 * out, as no verifier of ours would accept a token it signed.
 */
export function publicJwks(keys: ReadonlyMap<string, KeyObject>): Jwks {
  const published: Jwks['keys'] = [];
  for (const [kid, key] of keys) {
    const alg = algorithmOf(key);
    if (alg === undefined) continue;
    const publicKey = key.type === 'private' ? createPublicKey(key) : key;
    published.push({ ...publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' });
  }
  return { keys: published };
}

/** Keys known in-process (the identity service verifies with its own keys). */
export function staticKeySource(keys: ReadonlyMap<string, KeyObject>): KeySource {
  return { get: async (kid) => keys.get(kid), peek: (kid) => keys.get(kid) };
}

/**
 * Turns a JWKS into key objects, once: parsing a key per verification costs ~50x the verification.
 * Entries without a `kid`, or that are not EC/RSA public keys, are skipped. A key equal to the one that
 * `previous` holds under the same `kid` stays that very object, so the verifier's cache of verified tokens
 * (which checks the key object's identity) keeps the tokens of every key that did not change.
 */
export function keysFromJwks(jwks: Jwks, previous?: ReadonlyMap<string, KeyObject>): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const jwk of Array.isArray(jwks.keys) ? jwks.keys : []) {
    if (typeof jwk.kid !== 'string' || (jwk.kty !== 'EC' && jwk.kty !== 'RSA')) continue;
    try {
      const { d: _private, ...publicPart } = jwk;
      const key = createPublicKey({ key: publicPart, format: 'jwk' });
      const known = previous?.get(jwk.kid);
      keys.set(jwk.kid, known?.equals(key) === true ? known : key);
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
  /**
   * When set, the key set is re-validated this often in the background (a conditional request, answered
   * 304 while nothing changed), from the first use until `close()`: a key the issuer stops publishing
   * stops verifying within about this long. Without it, only `maxAgeMs` and unknown kids refresh.
   */
  refreshIntervalMs?: number;
  /** Told about failed fetches: every one made for a request, the first of a run of failed background ones. */
  onError?: (err: unknown) => void;
}

/** A key source over a JWKS URL; `close()` stops its background refresh. */
export interface JwksKeySource extends KeySource {
  /**
   * Every key held now, by `kid`, fetched first when none is held yet, as `get` does; rejects (503) when
   * keys cannot be had at all. A refresh replaces the map, never changes it: the answer is a snapshot.
   */
  current(): Promise<ReadonlyMap<string, KeyObject>>;
  close(): void;
}

/** What one fetch of the JWKS brought. */
type Fetched = { changed: false } | { changed: true; keys: Map<string, KeyObject>; etag: string | undefined };

/**
 * Keys fetched from a JWKS URL and cached: refreshed when they age, at once (rate-limited) when a token
 * names a `kid` the cache does not have, so a key rotation at the issuer is picked up without a restart,
 * and, with `refreshIntervalMs`, every few seconds in the background, so a key the issuer withdrew (a
 * leaked one) stops verifying everywhere within seconds. A background check costs the issuer a 304 and
 * the request path nothing: requests never wait for it.
 * Only one fetch runs at a time. When the issuer is unreachable, or answers something that is not a key
 * set, the cached keys keep working.
 */
export function jwksKeySource(options: JwksKeySourceOptions): JwksKeySource {
  const timeoutMs = options.timeoutMs ?? 2000;
  const maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
  const minRefreshIntervalMs = options.minRefreshIntervalMs ?? 30_000;
  let keys: Map<string, KeyObject> | undefined;
  let etag: string | undefined;
  let fetchedAt = 0;
  /** When a request last caused a fetch: the background checks do not count, or no unknown kid would ever fetch. */
  let attemptedAt = 0;
  let inFlight: Promise<void> | undefined;
  let backgroundFailing = false;

  const fetchKeys = async (): Promise<Fetched> => {
    // If-None-Match only with keys to fall back on: a 304 must never be all a first fetch gets.
    const conditional = keys !== undefined && etag !== undefined ? { 'if-none-match': etag } : {};
    const response = await fetch(options.url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json', ...conditional } });
    if (response.status === 304 && 'if-none-match' in conditional) {
      await response.body?.cancel();
      return { changed: false };
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`JWKS endpoint answered ${response.status}`);
    }
    const body = (await response.json()) as unknown;
    // An answer that is not a key set counts as a failed fetch: it must not wipe the cached keys.
    if (typeof body !== 'object' || body === null || !Array.isArray((body as Partial<Jwks>).keys)) {
      throw new Error('JWKS endpoint answered something that is not a key set');
    }
    return { changed: true, keys: keysFromJwks(body as Jwks, keys), etag: response.headers.get('etag') ?? undefined };
  };

  const load = async (background: boolean): Promise<void> => {
    if (!background) attemptedAt = Date.now();
    try {
      const fetched = await fetchKeys();
      if (fetched.changed) {
        keys = fetched.keys;
        etag = fetched.etag;
      }
      fetchedAt = Date.now();
      backgroundFailing = false;
    } catch (err) {
      // An issuer down for an hour must not write a line per check: the first failure of a run is enough.
      if (!background || !backgroundFailing) options.onError?.(err);
      if (background) backgroundFailing = true;
    }
  };

  // Requests join a fetch under way rather than queue another (periodic's rule), so that a burst of
  // tokens with new kids costs the issuer one fetch: this single flight is the key source's own.
  // Cleared in `.finally`, never inside `load`: a load that settles synchronously would clear the slot before it is set.
  const refresh = (background = false): Promise<void> => {
    inFlight ??= load(background).finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  // The background check, from the first use until close(); a fetch already running (a request's) is
  // as good as a check, so the check joins it. `load` reports its own failures.
  const checks =
    options.refreshIntervalMs === undefined
      ? undefined
      : periodic(() => refresh(true), { intervalMs: options.refreshIntervalMs, onError: (err) => options.onError?.(err) });

  /**
   * The fetch a call must wait for first, if any: the first one, or one for `kid` (a token's) when no held
   * key has it; keys that have aged are fetched again in the background. Undefined when nothing is to be
   * waited for, which is every call but the rare ones: a token check awaits nothing more than before.
   */
  const pending = (kid?: string): Promise<void> | undefined => {
    const now = Date.now();
    if (keys === undefined) return refresh().then(() => checks?.start());
    if (kid !== undefined && !keys.has(kid)) {
      // A fetch already running (another request with the new kid) may bring it: wait for it, start none.
      if (inFlight !== undefined) return inFlight;
      return now - attemptedAt >= minRefreshIntervalMs ? refresh() : undefined;
    }
    if (now - fetchedAt >= maxAgeMs && now - attemptedAt >= minRefreshIntervalMs) void refresh();
    return undefined;
  };
  /** The keys held; 503 when there are none at all. */
  const held = (): Map<string, KeyObject> => {
    if (keys === undefined) throw new ServiceUnavailableError('Token verification keys are unavailable');
    return keys;
  };

  return {
    async get(kid) {
      const wait = pending(kid);
      if (wait !== undefined) await wait;
      return held().get(kid);
    },
    peek(kid) {
      return keys?.get(kid);
    },
    async current() {
      const wait = pending();
      if (wait !== undefined) await wait;
      return held();
    },
    close() {
      void checks?.stop();
    },
  };
}
