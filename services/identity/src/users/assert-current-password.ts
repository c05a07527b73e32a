import { BadRequestError, ForbiddenError } from '@platform/errors';
import type { AuditContext } from '../request/audit-context.ts';
import { type FailedLoginDeps, countFailedLogin } from '../auth/count-failed-login.ts';
import type { PasswordHasher } from '../passwords/password-hasher.ts';
import { findUserById } from '../user-records/users.repository.ts';

const MISSING = 'body.currentPassword is required to change your own username';

/**
 * Checks the `currentPassword` of a user changing its own username: missing → 400, wrong → 403, and a
 * wrong one counts as a failed login, with the same block (CONTRACT.md part 4), so a stolen access token
 * cannot be used to guess the password either.
 */
export async function assertCurrentPassword(
  deps: FailedLoginDeps & { hasher: PasswordHasher },
  audit: AuditContext,
  userId: string,
  currentPassword: string | undefined,
): Promise<void> {
  if (currentPassword === undefined) throw new BadRequestError(MISSING, { messages: [MISSING] });
  const user = await findUserById(deps.db, userId);
  const matches = await deps.hasher.verify(currentPassword, user?.passwordHash);
  if (user !== undefined && matches) return;
  if (user !== undefined) await countFailedLogin(deps, user, audit, { username: user.username, reason: 'wrong-current-password' });
  throw new ForbiddenError('The current password is wrong');
}
