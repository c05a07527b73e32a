import type { Principal } from '@platform/auth';
import { ConflictError, ForbiddenError, NotFoundError } from '@platform/errors';
import type { Knex } from '@platform/service-kit';
import { findAccountByUserId } from '../accounts/accounts.repository.ts';
import { canonicalUuid } from '../accounts/canonical-uuid.ts';
import type { PasswordHasher } from '../auth/password-hasher.ts';
import type { SessionRevoker } from '../auth/session-revoker.ts';
import { type SessionEndReason, endUserSessions } from '../auth/sessions.repository.ts';
import type { components } from '../generated/openapi.ts';
import { assertUncommonPassword } from './password-rules.ts';
import { type UserResponse, toUserResponse } from './user-response.ts';
import { ADMIN_FIELDS, PROFILE_FIELDS, type UpdatableField, assertMayChange, assertValidUserFields, mayChange } from './user-rules.ts';
import type { UserRecord } from './user.ts';
import { type UserChanges, isUsernameTaken, lockUserById, updateUserRow } from './users.repository.ts';

type UpdateUserRequest = components['schemas']['UpdateUserRequest'];

/** What an update needs. */
export interface UpdateUserDeps {
  db: Knex;
  hasher: PasswordHasher;
  sessions: SessionRevoker;
}

function sameRoles(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((role) => b.includes(role));
}

/**
 * Why the user's sessions must end after this change, if they must: a new password, and any change of
 * roles or status (CONTRACT.md part 4: privilege changes act at once, not when the access tokens expire).
 */
function sessionEndReason(before: UserRecord, input: UpdateUserRequest): SessionEndReason | undefined {
  const rolesChanged = input.roles !== undefined && !sameRoles(before.roles, input.roles);
  const statusChanged = input.status !== undefined && input.status !== before.status;
  return input.password !== undefined || rolesChanged || statusChanged ? 'user-changed' : undefined;
}

/**
 * PATCH /v1/users/update. Only present fields change; each needs the caller's permission
 * (CONTRACT.md part 4). The user's row is locked while the change is judged and made, so what it is
 * compared with (the roles and status before) is what it replaces.
 */
export async function updateUser(deps: UpdateUserDeps, principal: Principal, input: UpdateUserRequest): Promise<UserResponse> {
  const fields = [...PROFILE_FIELDS, ...ADMIN_FIELDS].filter((field) => input[field] !== undefined);
  // Someone who may not touch this user at all learns nothing about it, not even whether it exists.
  if (!mayChange(principal, input.userId, 'firstName')) throw new ForbiddenError();
  assertMayChange(principal, input.userId, fields as UpdatableField[]);
  assertValidUserFields(input);
  if (input.password !== undefined) assertUncommonPassword(input.password, [input.username]);
  const userId = canonicalUuid(input.userId);

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
  const outcome = await deps.db
    .transaction(async (trx) => {
      const before = await lockUserById(trx, userId);
      if (before === undefined) return undefined;
      // The stored username is known only now; throwing rolls the change back.
      if (input.password !== undefined) assertUncommonPassword(input.password, [before.username]);
      const updated = await updateUserRow(trx, userId, changes);
      if (updated === undefined) return undefined;
      const reason = sessionEndReason(before, input);
      return { updated, ended: reason === undefined ? [] : await endUserSessions(trx, userId, reason) };
    })
    .catch((err: unknown) => {
      if (isUsernameTaken(err)) throw new ConflictError('Username already exists');
      throw err;
    });
  if (outcome === undefined) throw new NotFoundError('User not found');
  await deps.sessions.revoke(outcome.ended);
  const user = outcome.updated;
  return toUserResponse(user, await findAccountByUserId(deps.db, user.id));
}
