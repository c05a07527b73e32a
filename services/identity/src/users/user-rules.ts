import { type Principal, type Role, hasAnyRole } from '@platform/auth';
import { ForbiddenError } from '@platform/errors';

/** Fields of PATCH /v1/users/update that the user themself, a POWER_USER or an ADMIN may change. */
export const PROFILE_FIELDS = ['username', 'firstName', 'midName', 'lastName', 'locale', 'timezone'] as const;
/** Fields only an ADMIN may change. */
export const ADMIN_FIELDS = ['password', 'roles', 'status'] as const;
export type UpdatableField = (typeof PROFILE_FIELDS)[number] | (typeof ADMIN_FIELDS)[number];

const PROFILE_EDITORS: readonly Role[] = ['POWER_USER', 'ADMIN'];

/** May `principal` change `field` of user `userId`? (CONTRACT.md part 4) */
export function mayChange(principal: Principal, userId: string, field: UpdatableField): boolean {
  if ((ADMIN_FIELDS as readonly string[]).includes(field)) return hasAnyRole(principal, ['ADMIN']);
  return principal.userId === userId.toLowerCase() || hasAnyRole(principal, PROFILE_EDITORS);
}

/** Throws 403 naming the first field the principal may not change. */
export function assertMayChange(principal: Principal, userId: string, fields: readonly UpdatableField[]): void {
  const refused = fields.filter((field) => !mayChange(principal, userId, field));
  if (refused.length > 0) throw new ForbiddenError(`You are not allowed to change ${refused.join(', ')}`);
}
