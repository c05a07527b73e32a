import type { Principal } from '@platform/auth';
import { ConflictError, NotFoundError } from '@platform/errors';
import { type Knex, deadlineTransaction } from '@platform/service-kit/database';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { components } from '@platform/client/openapi/identity';
import { findUserById } from '../user-records/users.repository.ts';
import { type AccountResponse, toAccountResponse } from './account.ts';
import { assertMayUseAccountOf } from './account-access.ts';
import { assertMayChoosePlan, assertPictureUrl } from './account-rules.ts';
import { insertAccountIfAbsent } from './accounts.repository.ts';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import { assertCallerSessionLives } from '../sessions/sessions.repository.ts';

/** POST /v1/accounts/create: the one account of a user, recorded; a second answers 409, also under a race. */
export async function createAccount(
  db: Knex,
  principal: Principal,
  audit: AuditContext,
  input: components['schemas']['CreateAccountRequest'],
): Promise<AccountResponse> {
  const { userId: givenUserId, ...fields } = input;
  const userId = canonicalUuid(givenUserId);
  assertMayUseAccountOf(principal, userId);
  assertMayChoosePlan(principal, fields.subscriptionPlan);
  assertPictureUrl(fields.profilePictureUrl);
  if ((await findUserById(db, userId)) === undefined) throw new NotFoundError('User not found');
  const account = await deadlineTransaction(db, async (trx) => {
    // Judged when the request came; made only if the caller's session outlived a change of the caller in
    // flight (a demotion, a block, a logout: CONTRACT.md part 4, at once).
    await assertCallerSessionLives(trx, principal, userId);
    const created = await insertAccountIfAbsent(trx, userId, fields);
    if (created !== undefined) {
      const details = { accountId: created.id, type: created.type, subscriptionPlan: created.subscriptionPlan };
      await insertAuditEvent(trx, audit, { type: 'account.created', subjectUserId: userId, details });
    }
    return created;
  });
  if (account === undefined) throw new ConflictError('Account already exists');
  return toAccountResponse(account);
}
