import { type Principal, type Role, hasAnyRole } from '@platform/auth';
import { ForbiddenError, TooManyRequestsError } from '@platform/errors';
import type { UserRecord } from '../user-records/user.ts';

/** Roles whose holders a POWER_USER may not rename: its peers and its superiors. */
const PROTECTED_FROM_POWER_USERS: readonly Role[] = ['ADMIN', 'POWER_USER'];

/**
 * May `principal` change the username of `target`? (CONTRACT.md part 4) An ADMIN anyone's; a POWER_USER
 * its own and those of users holding neither ADMIN nor POWER_USER; anyone else only its own. The username
 * is the login and the address every reset mail goes to: renaming someone is taking their account over.
 */
export function mayRename(principal: Principal, target: Pick<UserRecord, 'id' | 'roles'>): boolean {
  if (hasAnyRole(principal, ['ADMIN']) || principal.userId === target.id) return true;
  return hasAnyRole(principal, ['POWER_USER']) && !target.roles.some((role) => PROTECTED_FROM_POWER_USERS.includes(role));
}

/** Throws 403 unless `mayRename`. */
export function assertMayRename(principal: Principal, target: Pick<UserRecord, 'id' | 'roles'>): void {
  if (!mayRename(principal, target)) throw new ForbiddenError('You are not allowed to change username');
}

/** A non-ADMIN changing its own username proves it knows the password (a stolen token alone must not do it). */
export function needsCurrentPassword(principal: Principal, userId: string): boolean {
  return principal.userId === userId && !hasAnyRole(principal, ['ADMIN']);
}

/** Throws 429 when today's count (this change included) passes the daily cap; Retry-After is the next UTC midnight. */
export function assertWithinDailyCap(changesToday: number, perDay: number): void {
  if (changesToday <= perDay) return;
  const now = new Date();
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  throw new TooManyRequestsError('Too many username changes today', (midnight - now.getTime()) / 1000);
}
