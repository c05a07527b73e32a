import { createHash, randomBytes } from 'node:crypto';

/** A new opaque refresh token: 256 random bits, base64url. */
export function newRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What the database keeps of a refresh token: its SHA-256. */
export function refreshTokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Why a refresh refuses a refresh token, its user aside. */
export type RefreshTokenFault = 'rotated' | 'ended' | 'expired' | 'outlived';

/**
 * Why a refresh would refuse this token now, its user's status aside (refresh.ts acts on each; introspection
 * asks only whether there is one): presented again after its rotation, revoked or its session ended, past its
 * own expiry, or its session past `sessionMaxLifetimeS` from login. Undefined when none applies.
 */
export function refreshTokenFault(
  record: { usedAt: Date | null; revokedAt: Date | null; sessionEndedAt: Date | null; expiresAt: Date; sessionCreatedAt: Date },
  sessionMaxLifetimeS: number,
  now = Date.now(),
): RefreshTokenFault | undefined {
  if (record.usedAt !== null) return 'rotated';
  if (record.revokedAt !== null || record.sessionEndedAt !== null) return 'ended';
  if (record.expiresAt.getTime() <= now) return 'expired';
  if (record.sessionCreatedAt.getTime() + sessionMaxLifetimeS * 1000 <= now) return 'outlived';
  return undefined;
}
