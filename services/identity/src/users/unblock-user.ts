import { NotFoundError } from '@platform/errors';
import type { Knex } from '@platform/service-kit';
import { findAccountByUserId } from '../accounts/accounts.repository.ts';
import { type UserWithFullAccountResponse, toUserWithFullAccountResponse } from './user-response.ts';
import { unblockUserRow } from './users.repository.ts';

/** GET /v1/users/unblock/{userId}: status ACTIVE and the failure count back to 0 (the caller is an ADMIN). */
export async function unblockUser(db: Knex, userId: string): Promise<UserWithFullAccountResponse> {
  const user = await unblockUserRow(db, userId);
  if (user === undefined) throw new NotFoundError('User not found');
  return toUserWithFullAccountResponse(user, await findAccountByUserId(db, userId));
}
