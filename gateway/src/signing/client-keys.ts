import { createPublicKey } from 'node:crypto';
import { parseRfc3339DateTime } from '@platform/service-kit';

/**
 * A client key of CONTRACT.md parts 2 and 12, as configured in GATEWAY_CLIENT_KEYS (or its file). From
 * `notAfter` (epoch ms) on, its signatures are refused.
 */
export type ClientKey = ({ keyId: string; alg: 'hmac-sha256'; secret: string } | { keyId: string; alg: 'ed25519'; publicKey: string }) & {
  notAfter?: number;
  /** May call `POST /v1/auth/introspect` (CONTRACT.md part 16): a resource server's key, not every client's. */
  introspection?: boolean;
};

/** The local default: one shared-secret key, so `pnpm start` needs no setup (CONTRACT.md part 2). */
export const LOCAL_CLIENT_KEYS: readonly ClientKey[] = [{ keyId: 'local-dev', alg: 'hmac-sha256', secret: 'local-dev-secret' }];

/** Shortest shared secret accepted: a guessable HMAC key would make every signature forgeable. */
const MIN_SECRET_BYTES = 16;
const KEY_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/**
 * `notAfter` strictly: an impossible date such as Feb 30 or hour 24 refuses the whole set (and so keeps
 * the last valid one), because read leniently it would roll over to a later instant and retire the key late.
 */
function notAfterOf(value: unknown, name: string): { notAfter?: number } {
  if (value === undefined) return {};
  const expected = `${name}: notAfter must be an RFC 3339 date-time, e.g. 2027-01-31T00:00:00Z`;
  if (typeof value !== 'string') throw new Error(expected);
  try {
    return { notAfter: parseRfc3339DateTime(value) };
  } catch (err) {
    throw new Error(`${expected}: ${(err as Error).message}`);
  }
}

function introspectionOf(value: unknown, name: string): { introspection?: boolean } {
  if (value === undefined) return {};
  if (typeof value !== 'boolean') throw new Error(`${name}: introspection must be true or false`);
  return { introspection: value };
}

function parseOne(entry: unknown, index: number): ClientKey {
  const at = `entry ${index}`;
  if (typeof entry !== 'object' || entry === null) throw new Error(`${at} must be an object`);
  const e = entry as Record<string, unknown>;
  if (typeof e.keyId !== 'string' || !KEY_ID.test(e.keyId)) {
    throw new Error(`${at}: keyId must be 1-128 characters of [A-Za-z0-9._:-]`);
  }
  const name = `key "${e.keyId}"`;
  if (e.alg === 'hmac-sha256') {
    if (typeof e.secret !== 'string' || Buffer.byteLength(e.secret) < MIN_SECRET_BYTES) {
      throw new Error(`${name}: hmac-sha256 needs a "secret" of at least ${MIN_SECRET_BYTES} bytes`);
    }
    return { keyId: e.keyId, alg: 'hmac-sha256', secret: e.secret, ...notAfterOf(e.notAfter, name), ...introspectionOf(e.introspection, name) };
  }
  if (e.alg === 'ed25519') {
    if (typeof e.publicKey !== 'string') throw new Error(`${name}: ed25519 needs a "publicKey" in PEM`);
    // createPublicKey also accepts a private key (deriving its public half); the gateway must never hold one.
    if (/PRIVATE KEY-----/.test(e.publicKey)) throw new Error(`${name}: publicKey must be a public key, not a private one`);
    let type: string | undefined;
    try {
      type = createPublicKey(e.publicKey).asymmetricKeyType;
    } catch {
      throw new Error(`${name}: publicKey is not a readable PEM public key`);
    }
    if (type !== 'ed25519') throw new Error(`${name}: publicKey is ${type ?? 'unknown'}, not ed25519`);
    return { keyId: e.keyId, alg: 'ed25519', publicKey: e.publicKey, ...notAfterOf(e.notAfter, name), ...introspectionOf(e.introspection, name) };
  }
  throw new Error(`${name}: alg must be hmac-sha256 or ed25519`);
}

/**
 * Parses GATEWAY_CLIENT_KEYS (or the content of GATEWAY_CLIENT_KEYS_FILE): a JSON array of
 * `{ keyId, alg, secret | publicKey, notAfter?, introspection? }`. Errors name the entry and what is wrong with it, never a secret.
 */
export function parseClientKeys(raw: string): readonly ClientKey[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('must be a JSON array of { keyId, alg, secret | publicKey, notAfter?, introspection? }');
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw new Error('must be a non-empty JSON array');
  const keys = parsed.map(parseOne);
  const seen = new Set<string>();
  for (const key of keys) {
    if (seen.has(key.keyId)) throw new Error(`keyId "${key.keyId}" appears twice`);
    seen.add(key.keyId);
  }
  return keys;
}
