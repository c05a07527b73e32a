import type { Role } from '@platform/auth';
import type { Knex } from '@platform/service-kit/database';
import { findAccountsByUserIds } from '../accounts/accounts.repository.ts';
import type { operations } from '@platform/client/openapi/identity';
import { decodeCursor } from '../pagination/cursor.ts';
import { type Page, type RawQuery, limitOf, pageOf } from '../pagination/page.ts';
import { type UserWithFullAccountResponse, toUserWithFullAccountResponse } from './user-response.ts';
import type { UserStatus } from '../user-records/user.ts';
import { findUsers } from '../user-records/users.repository.ts';

export type UsersQuery = RawQuery<NonNullable<operations['findUsers']['parameters']['query']>>;

/**
 * GET /v1/users (the caller is an ADMIN): the users matching every filter given, each with its account,
 * in creation order. How an operator finds the userId behind "my account is blocked".
 */
export async function listUsers(db: Knex, query: UsersQuery): Promise<Page<UserWithFullAccountResponse>> {
  const after = decodeCursor('users', query.cursor);
  const limit = limitOf(query.limit);
  const users = await findUsers(
    db,
    { username: query.username, q: query.q, status: query.status as UserStatus | undefined, role: query.role as Role | undefined },
    limit + 1,
    after,
  );
  const accounts = await findAccountsByUserIds(
    db,
    users.slice(0, limit).map((user) => user.id),
  );
  return pageOf('users', users, limit, (user) => toUserWithFullAccountResponse(user, accounts.get(user.id)));
}
