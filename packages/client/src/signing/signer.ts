import { type SigningAlgorithm } from './signature-base.ts';
import { base64, fromBase64, utf8Bytes } from './encoding.ts';

/** A WebCrypto key, named through `crypto.subtle` so no DOM or Node type library is needed for it. */
export type WebCryptoKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** A client key: the shared secret (UTF-8 text) or the Ed25519 private key (a CryptoKey or a PKCS#8 PEM). */
export type SigningKey = { alg: 'hmac-sha256'; secret: string } | { alg: 'ed25519'; privateKey: WebCryptoKey | string };

/** Signs signature bases with one client key. */
export interface Signer {
  keyId: string;
  alg: SigningAlgorithm;
  /** The base64 signature of `base` (its UTF-8 bytes). */
  sign(base: string): Promise<string>;
}

const PEM = /-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\s]+)-----END PRIVATE KEY-----/;

function importKey(key: SigningKey): Promise<WebCryptoKey> {
  if (key.alg === 'hmac-sha256') {
    if (key.secret === '') throw new TypeError('the hmac-sha256 secret is empty');
    return crypto.subtle.importKey('raw', utf8Bytes(key.secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  }
  if (typeof key.privateKey !== 'string') return Promise.resolve(key.privateKey);
  const pem = PEM.exec(key.privateKey);
  if (pem?.[1] === undefined) throw new TypeError('the ed25519 private key must be a PKCS#8 PEM ("BEGIN PRIVATE KEY") or a CryptoKey');
  return crypto.subtle.importKey('pkcs8', fromBase64(pem[1]), { name: 'Ed25519' }, false, ['sign']);
}

/**
 * Makes the signer of a client key. The key is imported once, on first use, and reused by every
 * request; a malformed key is refused here, synchronously, so a misconfigured client fails at once.
 */
export function createSigner(keyId: string, key: SigningKey): Signer {
  if (keyId === '') throw new TypeError('keyId is empty');
  const imported = importKey(key);
  // Avoids an unhandled rejection when the client is created and dropped before any request.
  imported.catch(() => undefined);
  const algorithm = key.alg === 'hmac-sha256' ? 'HMAC' : 'Ed25519';
  return {
    keyId,
    alg: key.alg,
    async sign(base) {
      return base64(await crypto.subtle.sign(algorithm, await imported, utf8Bytes(base)));
    },
  };
}
