import { NotFoundError } from '@platform/errors';
import type { Knex } from '@platform/service-kit';
import { findAccountByUserId } from '../accounts/accounts.repository.ts';
import type { AuditContext } from '../audit/audit-event.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import { type UserWithFullAccountResponse, toUserWithFullAccountResponse } from './user-response.ts';
import { lockUserById, unblockUserRow } from './users.repository.ts';

/**
 * GET /v1/users/unblock/{userId}: status ACTIVE and the failure count back to 0 (the caller is an ADMIN),
 * recorded with what it was before, in one transaction.
 */
export async function unblockUser(db: Knex, audit: AuditContext, userId: string): Promise<UserWithFullAccountResponse> {
  const user = await db.transaction(async (trx) => {
    const before = await lockUserById(trx, userId);
    if (before === undefined) return undefined;
    const after = await unblockUserRow(trx, userId);
    const details = { previousStatus: before.status, previousFailedLoginCount: before.failedLoginCount };
    await insertAuditEvent(trx, audit, { type: 'user.unblocked', subjectUserId: userId, details });
    return after;
  });
  if (user === undefined) throw new NotFoundError('User not found');
  return toUserWithFullAccountResponse(user, await findAccountByUserId(db, userId));
}
