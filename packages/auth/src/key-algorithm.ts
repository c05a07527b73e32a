import type { KeyObject } from 'node:crypto';

/** The algorithms access tokens are signed with (CONTRACT.md part 4). */
export type TokenAlgorithm = 'ES256' | 'RS256';

/** The smallest RSA modulus a token key may have: below it RS256 signatures are within reach of a forger. */
const MIN_RSA_BITS = 2048;

/**
 * The one algorithm a key signs and verifies access tokens with: ES256 for a P-256 EC key, RS256 for an
 * RSA key of at least 2048 bits; undefined for every other key (a smaller RSA key, another curve, an
 * Ed25519 or secret key), which then neither signs nor verifies. Identity applies it to the keys it
 * signs with and publishes, every verifier to the keys it verifies with: one rule on both sides.
 */
export function algorithmOf(key: KeyObject): TokenAlgorithm | undefined {
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1') return 'ES256';
  if (key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) >= MIN_RSA_BITS) return 'RS256';
  return undefined;
}
