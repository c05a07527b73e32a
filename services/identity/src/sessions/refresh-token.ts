import { createHash, randomBytes } from 'node:crypto';

/** A new opaque refresh token: 256 random bits, base64url. */
export function newRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What the database keeps of a refresh token: its SHA-256. */
export function refreshTokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
