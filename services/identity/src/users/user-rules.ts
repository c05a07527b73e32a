import { type Principal, type Role, hasAnyRole } from '@platform/auth';
import { BadRequestError, ForbiddenError } from '@platform/errors';

// The tz database names this runtime knows, plus the aliases Intl leaves out of its canonical list.
const TIMEZONES = new Set([...Intl.supportedValuesOf('timeZone'), 'UTC', 'Etc/UTC', 'GMT', 'Etc/GMT']);

/** The problems of user fields that a JSON schema cannot express; empty when there are none. */
export function userFieldProblems(fields: { timezone?: string; password?: string }, passwordField = 'password'): string[] {
  const problems: string[] = [];
  if (fields.timezone !== undefined && !TIMEZONES.has(fields.timezone)) {
    problems.push(`body.timezone must be a tz database name such as Europe/Istanbul, got "${fields.timezone}"`);
  }
  if (fields.password !== undefined) {
    const bytes = Buffer.byteLength(fields.password, 'utf8');
    // bcrypt reads at most 72 bytes: a longer password would silently lose its tail.
    if (bytes < 8 || bytes > 72) problems.push(`body.${passwordField} must be 8 to 72 bytes in UTF-8, got ${bytes}`);
  }
  return problems;
}

/** Throws 400 listing every problem, if there are any. */
export function assertValidUserFields(fields: { timezone?: string; password?: string }, passwordField?: string): void {
  const problems = userFieldProblems(fields, passwordField);
  if (problems.length > 0) throw new BadRequestError(problems.join('; '), { messages: problems });
}

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
