import { currentRequestLog } from '@platform/service-kit';
import type { AuditContext } from '../request/audit-context.ts';
import { findUserByUsername } from '../user-records/users.repository.ts';
import { issueResetToken } from './issue-reset-token.ts';
import type { PasswordResetDeps } from './password-reset-deps.ts';

/**
 * The part of an anonymous reset request that depends on the user: look it up and, when it exists, store
 * a new token (voiding older ones, recorded) and mail the link to the owner, unless the owner was sent
 * PASSWORD_RESET_MAILS_PER_USER_PER_HOUR reset e-mails in the last hour (issueResetToken). Runs from the reset work
 * queue, after the 202 and at a moment drawn at random (CONTRACT.md part 8; reset-work-queue.ts says why).
 */
export async function mailResetLink(deps: PasswordResetDeps, audit: AuditContext, username: string, page: URL | undefined): Promise<void> {
  const found = await findUserByUsername(deps.db, username);
  if (found === undefined) return;
  // Undefined when the user was renamed since the lookup: the old address gets nothing.
  const issued = await issueResetToken(deps, audit, found, { by: 'e-mail', mailsPerHour: deps.mailsPerUserPerHour });
  if (issued === undefined) return;
  if (issued === 'withheld') {
    // The user's id, not its address: an operator can tell whose inbox was spared.
    currentRequestLog(deps.logger).warn({ userId: found.id, mailsPerHour: deps.mailsPerUserPerHour }, 'password reset e-mail withheld: the user was sent as many in the last hour');
    return;
  }
  const { token, user } = issued;

  let link = `user id: ${user.id}\nreset token: ${token}`;
  if (page !== undefined) {
    page.searchParams.set('userId', user.id);
    page.searchParams.set('token', token);
    link = page.toString();
  }
  await deps.mailer.send({
    to: user.username,
    subject: 'Reset your password',
    text:
      `Hello ${user.firstName},\n\nsomeone asked to reset the password of ${user.username}. If it was you, use this ` +
      `within ${Math.round(deps.tokenTtlS / 60)} minutes:\n\n${link}\n\nIf it was not you, ignore this e-mail; your password stays as it is.\n`,
  });
}
