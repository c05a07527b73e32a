import type { Principal } from '@platform/auth';
import type { AuditContext } from '../request/audit-context.ts';
import { assertCallerSessionLives } from '../sessions/sessions.repository.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { UserRecord } from '../user-records/user.ts';
import { type ResetRecipient, holdResetTokens, keyShareLockUser, replaceResetToken, resetMailsInLastHour } from './password-reset.repository.ts';
import type { PasswordResetDeps } from './password-reset-deps.ts';
import { newResetToken, resetTokenHash } from './reset-token.ts';
import { deadlineTransaction } from '@platform/service-kit/database';

/** A token just issued, and the user as it was under the lock (the mail goes to this username). */
export interface IssuedResetToken {
  token: string;
  expiresAt: Date;
  user: ResetRecipient;
}

/**
 * A new reset token for the user the caller looked up, voiding older ones, recorded as
 * `password_reset.requested` in the same transaction (how it is delivered, never the token). Undefined
 * when the user is gone or its username is no longer the one looked up. An ADMIN's ticket is refused 401
 * when the ADMIN's session ended while it waited.
 *
 * The user's row is locked first and its username compared with the one looked up: a change of the
 * username commits either before (then no token is issued for the old address) or waits for this
 * transaction and then voids the token (update-user does, in its own transaction). Without the lock a
 * rename committing between the lookup and this insert left a live token mailed to the old address.
 *
 * A token to be e-mailed is `'withheld'` when the user was sent `mailsPerHour` reset e-mails in the last
 * hour (PASSWORD_RESET_MAILS_PER_USER_PER_HOUR): callers from many keys and addresses, each within its own
 * throttle, cannot flood one inbox. Nothing is stored then, so the token last mailed stays usable. Counted
 * under the lock of the user's tokens, so replicas issuing at once cannot pass the bound together.
 */
export async function issueResetToken(deps: PasswordResetDeps, audit: AuditContext, user: Pick<UserRecord, 'id' | 'username'>, delivery: { by: 'ticket'; admin: Principal }): Promise<IssuedResetToken | undefined>;
export async function issueResetToken(
  deps: PasswordResetDeps,
  audit: AuditContext,
  user: Pick<UserRecord, 'id' | 'username'>,
  delivery: { by: 'e-mail'; mailsPerHour: number },
): Promise<IssuedResetToken | 'withheld' | undefined>;
export async function issueResetToken(
  deps: PasswordResetDeps,
  audit: AuditContext,
  user: Pick<UserRecord, 'id' | 'username'>,
  delivery: { by: 'e-mail'; mailsPerHour: number } | { by: 'ticket'; admin: Principal },
): Promise<IssuedResetToken | 'withheld' | undefined> {
  const token = newResetToken();
  const expiresAt = new Date(Date.now() + deps.tokenTtlS * 1000);
  const current = await deadlineTransaction(deps.db, async (trx) => {
    const locked = await keyShareLockUser(trx, user.id);
    // A ticket is the ADMIN's power over the user: given only if the ADMIN's session outlived a change of the
    // ADMIN in flight (a demotion, a block, a logout: CONTRACT.md part 4, at once).
    if (delivery.by === 'ticket') await assertCallerSessionLives(trx, delivery.admin, user.id);
    if (locked === undefined || locked.username !== user.username) return undefined;
    await holdResetTokens(trx, user.id);
    if (delivery.by === 'e-mail' && (await resetMailsInLastHour(trx, user.id)) >= delivery.mailsPerHour) return 'withheld' as const;
    await replaceResetToken(trx, user.id, resetTokenHash(token), expiresAt);
    // The e-mails' count reads these (resetMailsInLastHour).
    await insertAuditEvent(trx, audit, { type: 'password_reset.requested', subjectUserId: user.id, details: { delivery: delivery.by, expiresAt: expiresAt.toISOString() } });
    return locked;
  });
  return current === undefined || current === 'withheld' ? current : { token, expiresAt, user: current };
}
