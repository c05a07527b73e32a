import type { Principal } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import { type Knex, deadlineTransaction } from '@platform/service-kit/database';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { components } from '@platform/client/openapi/identity';
import { type AccountRecord, type AccountResponse, toAccountResponse } from './account.ts';
import { mayUseAccountOf } from './account-access.ts';
import { assertPictureUrl } from './account-rules.ts';
import { type AccountFields, lockAccountById, updateAccountRow } from './accounts.repository.ts';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import { assertCallerSessionLives } from '../sessions/sessions.repository.ts';

/** The fields whose stored value the update changed (a field sent with its current value changed nothing). */
function changedFields(before: AccountRecord, after: AccountRecord, sent: AccountFields): string[] {
  return (Object.keys(sent) as Array<keyof AccountFields>).filter((field) => sent[field] !== undefined && before[field] !== after[field]);
}

/**
 * PATCH /v1/accounts/update: present fields change; a new phone number is unverified again. The row is
 * locked while it is judged and changed, so the recorded `account.updated` names exactly the fields this
 * update changed.
 */
export async function updateAccount(
  db: Knex,
  principal: Principal,
  audit: AuditContext,
  input: components['schemas']['UpdateAccountRequest'],
): Promise<AccountResponse> {
  const { accountId: givenAccountId, ...fields } = input;
  const accountId = canonicalUuid(givenAccountId);
  const account = await deadlineTransaction(db, async (trx) => {
    const before = await lockAccountById(trx, accountId);
    if (before === undefined || !mayUseAccountOf(principal, before.userId)) throw new NotFoundError('Account not found');
    // Judged when the request came; made only if the caller's session outlived the wait (CONTRACT.md part 4, at once).
    await assertCallerSessionLives(trx, principal, before.userId);
    assertPictureUrl(fields.profilePictureUrl);
    // Locked above, so it is there: undefined only to the type checker.
    const after = await updateAccountRow(trx, accountId, fields);
    if (after === undefined) throw new NotFoundError('Account not found');
    const changed = changedFields(before, after, fields);
    if (changed.length > 0) await insertAuditEvent(trx, audit, { type: 'account.updated', subjectUserId: after.userId, details: { accountId, fields: changed } });
    return after;
  });
  return toAccountResponse(account);
}
