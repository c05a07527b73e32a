import type { AuditContext } from '../audit/audit-event.ts';
import { findUserByUsername } from '../users/users.repository.ts';
import { issueResetToken } from './issue-reset-token.ts';
import type { PasswordResetDeps } from './request-password-reset.ts';

/**
 * The part of an anonymous reset request that depends on the user: look it up and, when it exists, store
 * a new token (voiding older ones, recorded) and mail the link to the owner. Runs after the 202 is decided.
 */
export async function mailResetLink(deps: PasswordResetDeps, audit: AuditContext, username: string, page: URL | undefined): Promise<void> {
  const user = await findUserByUsername(deps.db, username);
  if (user === undefined) return;
  const { token } = await issueResetToken(deps, audit, user, 'e-mail');

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

/**
 * Runs `mailResetLink` once the current request has had its answer: from the next turn of the event loop,
 * so the response of a known user and of an unknown one take the same path and the same time. A failure
 * is logged (without the username) and never becomes an unhandled rejection.
 */
export function mailResetLinkLater(deps: PasswordResetDeps, audit: AuditContext, username: string, page: URL | undefined): void {
  setImmediate(() => {
    mailResetLink(deps, audit, username, page).catch((err: unknown) => {
      try {
        deps.logger.error({ err }, 'password reset request could not be completed');
      } catch {
        // Nothing left to tell: a logging fault must not take the process down either.
      }
    });
  });
}
