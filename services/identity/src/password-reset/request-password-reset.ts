import { type Principal, hasAnyRole } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import type { AuditContext } from '../request/audit-context.ts';
import type { components } from '@platform/client/openapi/identity';
import { findUserByUsername } from '../user-records/users.repository.ts';
import { issueResetToken } from './issue-reset-token.ts';
import { mailResetLink } from './mail-reset-link.ts';
import type { PasswordResetDeps } from './password-reset-deps.ts';
import { assertAllowedLink } from '../request/link-allowlist.ts';
import type { ResetWorkQueue } from './reset-work-queue.ts';

/** Whether `principal` asks for a ticket (an ADMIN: 201 and the token) rather than an e-mail. */
export const asksForTicket = (principal: Principal | undefined): principal is Principal => principal !== undefined && hasAnyRole(principal, ['ADMIN']);

/** 201 for an ADMIN (the ticket), 202 for everyone else (nothing). */
export type ResetRequestOutcome = { ticket: components['schemas']['PasswordResetTicket'] } | { accepted: true };

/**
 * POST /v1/users/password-reset-request. Anonymous callers learn nothing: the 202 is decided before the
 * user is even looked up, and everything that depends on the user (the lookup, the token, the mail) goes
 * to the reset work queue (CONTRACT.md part 8), so neither the body nor the time of this answer, nor that
 * of the caller's next request, tells whether the user exists. An ADMIN is no anonymous caller: it gets
 * the ticket, or 404, at once.
 */
export async function requestPasswordReset(
  deps: PasswordResetDeps,
  queue: ResetWorkQueue,
  principal: Principal | undefined,
  audit: AuditContext,
  input: components['schemas']['PasswordResetRequestBody'],
): Promise<ResetRequestOutcome> {
  // Checked first, so a refused link says nothing about the username either.
  const page = input.resetPageLink === undefined ? undefined : assertAllowedLink(input.resetPageLink, deps.allowedOrigins, 'resetPageLink');
  if (!asksForTicket(principal)) {
    queue.add(() => mailResetLink(deps, audit, input.username, page));
    return { accepted: true };
  }
  const user = await findUserByUsername(deps.db, input.username);
  // Unknown, or renamed between the lookup and the token: no user has that username (any more).
  const issued = user === undefined ? undefined : await issueResetToken(deps, audit, user, { by: 'ticket', admin: principal });
  if (issued === undefined) throw new NotFoundError('User not found');
  return { ticket: { userId: issued.user.id, token: issued.token, expiresAt: issued.expiresAt.toISOString() } };
}
