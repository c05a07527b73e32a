import type { Principal } from '@platform/auth';
import { ConflictError, NotFoundError } from '@platform/errors';
import { type Knex, retryingTransaction } from '@platform/service-kit/database';
import { findAccountByUserId } from '../accounts/accounts.repository.ts';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvents } from '../audit/audit.repository.ts';
import { type UserWithFullAccountResponse, toUserWithFullAccountResponse } from './user-response.ts';
import { lockUserById, unblockUserRow } from '../user-records/users.repository.ts';
import { assertCallerSessionLives, holdCallerFirst } from '../sessions/sessions.repository.ts';

/** The 409 of an unblock of a user who is not BLOCKED. */
export const NOT_BLOCKED_MESSAGE = 'User is not blocked';

/**
 * GET /v1/users/unblock/{userId}: lifts a block, and only a block (the caller is an ADMIN): a BLOCKED user
 * becomes ACTIVE with the failure count back to 0, recorded as a status change and as `user.unblocked`,
 * with what it was before, in one transaction on the locked row. An ACTIVE user is answered as it is, with
 * nothing changed or recorded (CONTRACT.md part 4, amended: a retried unblock is not an error). A user in
 * any other status (INACTIVE, EXPIRED, DELETED) answers 409 and is left as it is: an unblock never revives a
 * deleted user; an ADMIN who means to reactivate one says so with `PATCH /v1/users/update` `status`.
 */
export async function unblockUser(db: Knex, principal: Principal, audit: AuditContext, userId: string): Promise<UserWithFullAccountResponse> {
  // Run again when Postgres picks it to break a deadlock of others queued on the same row (a 503 otherwise).
  const unblocked = await retryingTransaction(db, async (trx) => {
    await holdCallerFirst(trx, principal, userId);
    const before = await lockUserById(trx, userId);
    // Judged when the request came; made only if the ADMIN's session outlived the wait (CONTRACT.md part 4, at once).
    await assertCallerSessionLives(trx, principal, userId);
    if (before === undefined) return undefined;
    // Read before the commit: nothing that can fail may come between the change and its answer (a 5xx
    // frees the idempotency key, and the retry would make the change again).
    const account = await findAccountByUserId(trx, userId);
    if (before.status === 'ACTIVE') return { user: before, account };
    if (before.status !== 'BLOCKED') throw new ConflictError(NOT_BLOCKED_MESSAGE, { cause: new Error(`the user is ${before.status}`) });
    const after = await unblockUserRow(trx, userId);
    const details = { previousStatus: before.status, previousFailedLoginCount: before.failedLoginCount };
    await insertAuditEvents(trx, audit, [
      { type: 'user.status_changed', subjectUserId: userId, details: { previousStatus: before.status, newStatus: 'ACTIVE' } },
      { type: 'user.unblocked', subjectUserId: userId, details },
    ]);
    return after === undefined ? undefined : { user: after, account };
  });
  if (unblocked === undefined) throw new NotFoundError('User not found');
  return toUserWithFullAccountResponse(unblocked.user, unblocked.account);
}
