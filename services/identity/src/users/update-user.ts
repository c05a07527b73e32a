import { type Principal, hasAnyRole } from '@platform/auth';
import { ConflictError, ForbiddenError, NotFoundError } from '@platform/errors';
import type { AccountRecord } from '../accounts/account.ts';
import { findAccountByUserId } from '../accounts/accounts.repository.ts';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvents } from '../audit/audit.repository.ts';
import type { FailedLoginDeps } from '../auth/count-failed-login.ts';
import type { PasswordHasher } from '../passwords/password-hasher.ts';
import { type SessionEndReason, assertCallerSessionLives, holdCallerFirst } from '../sessions/sessions.repository.ts';
import type { components } from '@platform/client/openapi/identity';
import { voidOpenResetTokens } from '../password-reset/password-reset.repository.ts';
import { assertCurrentPassword } from './assert-current-password.ts';
import { assertUncommonPassword } from '../passwords/password-rules.ts';
import { type UserResponse, toUserResponse } from './user-response.ts';
import { ADMIN_FIELDS, PROFILE_FIELDS, type UpdatableField, assertMayChange, mayChange } from './user-rules.ts';
import { assertValidUserFields } from '../user-records/user-fields.ts';
import type { UserRecord } from '../user-records/user.ts';
import { sameRoles, userUpdateEvents } from './user-events.ts';
import { sendUsernameChangeNotice } from './username-change-notice.ts';
import { countUsernameChange } from '../user-records/username-changes.repository.ts';
import { assertMayRename, assertWithinDailyCap, needsCurrentPassword } from './username-rules.ts';
import { type UserChanges, isUsernameTaken, lockUserById, updateUserRow } from '../user-records/users.repository.ts';

type UpdateUserRequest = components['schemas']['UpdateUserRequest'];

/** What an update needs; a wrong current password is counted like a failed login, hence the login's deps. */
export interface UpdateUserDeps extends FailedLoginDeps {
  hasher: PasswordHasher;
  /** USERNAME_CHANGES_PER_DAY. */
  usernameChangesPerDay: number;
}

/**
 * Why the user's sessions must end after this change, if they must: a new username (the login moved),
 * a new password, and any change of roles or status (CONTRACT.md part 4: privilege changes act at once,
 * not when the access tokens expire).
 */
function sessionEndReason(before: UserRecord, input: UpdateUserRequest, renamed: boolean): SessionEndReason | undefined {
  if (renamed) return 'username-changed';
  const rolesChanged = input.roles !== undefined && !sameRoles(before.roles, input.roles);
  const statusChanged = input.status !== undefined && input.status !== before.status;
  return input.password !== undefined || rolesChanged || statusChanged ? 'user-changed' : undefined;
}

type Outcome = { taken: true } | { taken: false; updated: UserRecord; account: AccountRecord | undefined; ended: string[]; previousUsername: string | undefined };

/**
 * PATCH /v1/users/update. Only present fields change; each needs the caller's permission
 * (CONTRACT.md part 4). The user's row is locked while the change is judged and made, so what it is
 * compared with (the roles and username before, the day's count of renames) is what it replaces, and
 * what changed is recorded in the same transaction.
 */
export async function updateUser(deps: UpdateUserDeps, principal: Principal, audit: AuditContext, input: UpdateUserRequest): Promise<UserResponse> {
  const fields = [...PROFILE_FIELDS, ...ADMIN_FIELDS].filter((field) => input[field] !== undefined);
  // Someone who may not touch this user at all learns nothing about it, not even whether it exists.
  if (!mayChange(principal, input.userId, 'firstName')) throw new ForbiddenError();
  assertMayChange(principal, input.userId, fields as UpdatableField[]);
  assertValidUserFields(input);
  const userId = canonicalUuid(input.userId);
  const isAdmin = hasAnyRole(principal, ['ADMIN']);
  if (input.username !== undefined && needsCurrentPassword(principal, userId)) await assertCurrentPassword(deps, audit, userId, input.currentPassword);
  if (input.password !== undefined) assertUncommonPassword(input.password, [input.username]);

  const changes: UserChanges = {
    username: input.username,
    firstName: input.firstName,
    midName: input.midName,
    lastName: input.lastName,
    locale: input.locale,
    timezone: input.timezone,
    roles: input.roles,
    status: input.status,
    ...(input.status === 'ACTIVE' ? { failedLoginCount: 0 } : {}),
    ...(input.password === undefined ? {} : { passwordHash: await deps.hasher.hash(input.password) }),
  };
  // Accounts are their owner's or an ADMIN's to read (CONTRACT.md part 4): a POWER_USER who changed
  // someone's name gets the user back, not that user's phone number and address.
  const mayReadAccount = isAdmin || principal.userId === userId;
  const outcome = await deps.sessions.transaction(async (trx, ending): Promise<Outcome | undefined> => {
    await holdCallerFirst(trx, principal, userId);
    const before = await lockUserById(trx, userId);
    if (before === undefined) return undefined;
    // Judged when the request came; made only if the caller's session outlived the wait for the row (a
    // block, a role change or a logout that committed meanwhile ended it: CONTRACT.md part 4, at once).
    await assertCallerSessionLives(trx, principal, userId);
    const renamed = input.username !== undefined && input.username !== before.username;
    if (renamed) {
      assertMayRename(principal, before);
      // Counted before the uniqueness check and kept when it fails: a taken address costs a try too, so
      // the 409/200 difference answers at most USERNAME_CHANGES_PER_DAY questions per user and day.
      if (!isAdmin) assertWithinDailyCap(await countUsernameChange(trx, userId), deps.usernameChangesPerDay);
    }
    // The stored username is known only now; throwing rolls the change back.
    if (input.password !== undefined) assertUncommonPassword(input.password, [before.username]);
    const updated = await trx
      .transaction((savepoint) => updateUserRow(savepoint, userId, changes))
      .catch((err: unknown) => {
        if (isUsernameTaken(err)) return 'taken' as const;
        throw err;
      });
    if (updated === 'taken') return { taken: true };
    if (updated === undefined) return undefined;
    await insertAuditEvents(trx, audit, userUpdateEvents(before, updated, input.password !== undefined));
    const reason = sessionEndReason(before, input, renamed);
    const ended = reason === undefined ? [] : await ending.allOf(audit, userId, reason);
    if (renamed) await voidOpenResetTokens(trx, userId);
    // Read before the commit: nothing that can fail may come between the change and its answer (a 5xx
    // frees the idempotency key, and the retry would make the change again).
    const account = mayReadAccount ? await findAccountByUserId(trx, userId) : undefined;
    return { taken: false, updated, account, ended, previousUsername: renamed ? before.username : undefined };
  });
  if (outcome === undefined) throw new NotFoundError('User not found');
  if (outcome.taken) throw new ConflictError('Username already exists');
  const user = outcome.updated;
  if (outcome.previousUsername !== undefined) {
    sendUsernameChangeNotice(deps.mailer, { firstName: user.firstName, previousUsername: outcome.previousUsername, newUsername: user.username });
  }
  return toUserResponse(user, outcome.account);
}
