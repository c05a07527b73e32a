import type { Principal } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import type { Knex } from '@platform/service-kit';
import type { components } from '../generated/openapi.ts';
import { type AccountResponse, toAccountResponse } from './account.ts';
import { assertMayUseAccountOf } from './account-access.ts';
import { assertPictureUrl } from './account-rules.ts';
import { findAccountById, updateAccountRow } from './accounts.repository.ts';
import { canonicalUuid } from './canonical-uuid.ts';

/** PATCH /v1/accounts/update: present fields change; a new phone number is unverified again. */
export async function updateAccount(db: Knex, principal: Principal, input: components['schemas']['UpdateAccountRequest']): Promise<AccountResponse> {
  const { accountId: givenAccountId, ...fields } = input;
  const accountId = canonicalUuid(givenAccountId);
  const existing = await findAccountById(db, accountId);
  if (existing === undefined) throw new NotFoundError('Account not found');
  assertMayUseAccountOf(principal, existing.userId);
  assertPictureUrl(fields.profilePictureUrl);
  const account = await updateAccountRow(db, accountId, fields);
  if (account === undefined) throw new NotFoundError('Account not found');
  return toAccountResponse(account);
}
