import type { Principal } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import type { Knex } from '@platform/service-kit/database';
import { type AccountResponse, toAccountResponse } from './account.ts';
import { assertMayUseAccountOf } from './account-access.ts';
import { findAccountByUserId } from './accounts.repository.ts';
import { canonicalUuid } from '../request/canonical-uuid.ts';

/** GET /v1/accounts/{userId}: the account of a user, to that user or an ADMIN. */
export async function getAccountOfUser(db: Knex, principal: Principal, givenUserId: string): Promise<AccountResponse> {
  const userId = canonicalUuid(givenUserId);
  assertMayUseAccountOf(principal, userId);
  const account = await findAccountByUserId(db, userId);
  if (account === undefined) throw new NotFoundError('Account not found');
  return toAccountResponse(account);
}
