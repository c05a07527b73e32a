import { type Principal, assertSelfOrRole } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import type { Knex } from '@platform/service-kit/database';
import { findAccountByUserId } from '../accounts/accounts.repository.ts';
import { type UserWithFullAccountResponse, toUserWithFullAccountResponse } from './user-response.ts';
import { findUserById } from '../user-records/users.repository.ts';

/**
 * GET /v1/users/{userId}: the user with its account, to the user itself or an ADMIN. Anyone else gets
 * 403 before the id is looked up, so the answer never tells whether it exists.
 */
export async function getUser(db: Knex, principal: Principal, userId: string): Promise<UserWithFullAccountResponse> {
  assertSelfOrRole(principal, userId, ['ADMIN']);
  const user = await findUserById(db, userId);
  if (user === undefined) throw new NotFoundError('User not found');
  return toUserWithFullAccountResponse(user, await findAccountByUserId(db, userId));
}
