import { createHmac, timingSafeEqual, verify } from 'node:crypto';
import type { VerificationKey } from './verification-keys.ts';

/**
 * True when `signature` is the key's signature over `base`: HMAC-SHA256 compared in constant time, or
 * an Ed25519 verification with the client's public key. What http-message-signatures' verifiers do for
 * these two algorithms (the tests compare the two), but synchronously: theirs answer with a promise for work
 * that never waits, and every signed request paid for it (a promise, an await and a closure per request).
 */
export function signatureMatches(base: string, signature: Buffer, key: VerificationKey): boolean {
  const data = Buffer.from(base, 'utf8');
  try {
    if (key.alg === 'hmac-sha256') {
      const expected = createHmac('sha256', key.key).update(data).digest();
      return signature.length === expected.length && timingSafeEqual(signature, expected);
    }
    return verify(null, data, key.key, signature);
  } catch {
    // A signature of the wrong shape for the algorithm is simply not a match.
    return false;
  }
}
