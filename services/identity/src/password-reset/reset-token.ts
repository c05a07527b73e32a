import { createHash, randomBytes } from 'node:crypto';

/** A new reset token: 256 random bits, base64url. */
export function newResetToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What the database keeps of a reset token. */
export function resetTokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
