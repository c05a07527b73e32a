import { createVerifier } from 'http-message-signatures';
import type { VerificationKey } from './verification-keys.ts';

/**
 * True when `signature` is the key's signature over `base`: HMAC-SHA256 compared in constant time, or
 * an Ed25519 verification with the client's public key (http-message-signatures' verifiers).
 */
export async function signatureMatches(base: string, signature: Buffer, key: VerificationKey): Promise<boolean> {
  const verify = createVerifier(key.key, key.alg);
  try {
    return (await verify(Buffer.from(base, 'utf8'), signature)) === true;
  } catch {
    // A signature of the wrong shape for the algorithm is simply not a match.
    return false;
  }
}
