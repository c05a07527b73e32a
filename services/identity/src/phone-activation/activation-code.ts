import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';

/** A 6-digit code from the CSPRNG, leading zeros kept. */
export function newActivationCode(): string {
  return randomInt(0, 1_000_000).toString().padStart(6, '0');
}

/**
 * The HMAC stored for a code. The account id is part of the input, so a stolen row cannot be matched
 * against another account's code.
 */
export function activationCodeHmac(key: string, accountId: string, code: string): Buffer {
  return createHmac('sha256', key).update(`${accountId}:${code}`).digest();
}

/** Constant-time comparison of two HMACs. */
export function sameHmac(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
