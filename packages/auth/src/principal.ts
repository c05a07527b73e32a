import { ForbiddenError } from '@platform/errors';
import type { Role } from './roles.ts';

/** Who a verified access token speaks for (CONTRACT.md part 4 claims, named for code). */
export interface Principal {
  /** `sub`: the user id. */
  userId: string;
  username: string;
  roles: readonly Role[];
  /** `sid`: the login session the token belongs to. */
  sessionId: string;
  /** `jti`: the token's own id, the blacklist key. */
  tokenId: string;
  /** `exp`, epoch seconds. */
  expiresAt: number;
}

/** True when the principal holds at least one of the roles. */
export function hasAnyRole(principal: Principal, roles: readonly Role[]): boolean {
  return principal.roles.some((role) => roles.includes(role));
}

/** Throws 403 unless the principal holds at least one of the roles. */
export function assertAnyRole(principal: Principal, roles: readonly Role[]): void {
  if (!hasAnyRole(principal, roles)) throw new ForbiddenError();
}

/** Throws 403 unless the principal is the user `userId` or holds one of the roles. */
export function assertSelfOrRole(principal: Principal, userId: string, roles: readonly Role[]): void {
  // Ids are uuids, which may arrive in upper case; the token carries them as stored (lower case).
  if (principal.userId !== userId.toLowerCase() && !hasAnyRole(principal, roles)) throw new ForbiddenError();
}
