import type { AuditContext } from '../audit/audit-event.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { UserRecord } from '../users/user.ts';
import { replaceResetToken } from './password-reset.repository.ts';
import type { PasswordResetDeps } from './request-password-reset.ts';
import { newResetToken, resetTokenHash } from './reset-token.ts';

/**
 * A new reset token for the user, voiding older ones, recorded as `password_reset.requested` in the same
 * transaction (how it is delivered, never the token). Returns the token for the mail or the ADMIN's ticket.
 */
export async function issueResetToken(
  deps: PasswordResetDeps,
  audit: AuditContext,
  user: UserRecord,
  delivery: 'e-mail' | 'ticket',
): Promise<{ token: string; expiresAt: Date }> {
  const token = newResetToken();
  const expiresAt = new Date(Date.now() + deps.tokenTtlS * 1000);
  await deps.db.transaction(async (trx) => {
    await replaceResetToken(trx, user.id, resetTokenHash(token), expiresAt);
    await insertAuditEvent(trx, audit, { type: 'password_reset.requested', subjectUserId: user.id, details: { delivery, expiresAt: expiresAt.toISOString() } });
  });
  return { token, expiresAt };
}
