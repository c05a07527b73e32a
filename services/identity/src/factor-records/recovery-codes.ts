import { createHash, randomBytes } from 'node:crypto';
import { base32 } from './totp.ts';

/** Recovery codes given at a factor's confirmation (CONTRACT.md part 15). */
export const RECOVERY_CODES = 10;

/** A new recovery code: 80 random bits in base32, in four groups (`ABCD-EFGH-IJKL-MNOP`). */
export function newRecoveryCode(): string {
  return (base32(randomBytes(10)).match(/.{4}/g) ?? []).join('-');
}

/**
 * How a recovery code is stored: SHA-256 of its canonical form (upper case, no separators). 80 random bits
 * need no slow hash; the code itself is never stored.
 */
export function recoveryCodeHash(code: string): Buffer {
  return createHash('sha256').update(code.toUpperCase().replace(/[^A-Z2-7]/g, '')).digest();
}
