import type { Principal } from '@platform/auth';
import { ConflictError, ForbiddenError, NotFoundError } from '@platform/errors';
import type { Knex } from '@platform/service-kit';
import { findAccountByUserId } from '../accounts/accounts.repository.ts';
import type { PasswordHasher } from '../auth/password-hasher.ts';
import type { SessionRevoker } from '../auth/session-revoker.ts';
import { endUserSessions } from '../auth/sessions.repository.ts';
import type { components } from '../generated/openapi.ts';
import { assertUncommonPassword } from './password-rules.ts';
import { type UserResponse, toUserResponse } from './user-response.ts';
import { ADMIN_FIELDS, PROFILE_FIELDS, type UpdatableField, assertMayChange, assertValidUserFields, mayChange } from './user-rules.ts';
import { type UserChanges, isUsernameTaken, updateUserRow } from './users.repository.ts';

type UpdateUserRequest = components['schemas']['UpdateUserRequest'];

/**
 * PATCH /v1/users/update. Only present fields change; each needs the caller's permission
 * (CONTRACT.md part 4). A new password or a status other than ACTIVE ends the user's sessions.
 */
export async function updateUser(deps: { db: Knex; hasher: PasswordHasher; sessions: SessionRevoker }, principal: Principal, input: UpdateUserRequest): Promise<UserResponse> {
  const fields = [...PROFILE_FIELDS, ...ADMIN_FIELDS].filter((field) => input[field] !== undefined);
  // Someone who may not touch this user at all learns nothing about it, not even whether it exists.
  if (!mayChange(principal, input.userId, 'firstName')) throw new ForbiddenError();
  assertMayChange(principal, input.userId, fields as UpdatableField[]);
  assertValidUserFields(input);
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
  const endsSessions = input.password !== undefined || (input.status !== undefined && input.status !== 'ACTIVE');
  const outcome = await deps.db
    .transaction(async (trx) => {
      const updated = await updateUserRow(trx, input.userId, changes);
      if (updated === undefined) return undefined;
      // The stored username is known only now; throwing rolls the change back.
      if (input.password !== undefined) assertUncommonPassword(input.password, [updated.username]);
      return { updated, ended: endsSessions ? await endUserSessions(trx, updated.id, 'user-changed') : [] };
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

