import { createHash, randomBytes } from 'node:crypto';
import { type Principal, hasAnyRole } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import type { Knex, Logger } from '@platform/service-kit';
import type { components } from '../generated/openapi.ts';
import type { Mailer } from '../notifications/mailer.ts';
import { findUserByUsername } from '../users/users.repository.ts';
import { replaceResetToken } from './password-reset.repository.ts';
import { assertAllowedLink } from './redirect-allowlist.ts';

export interface PasswordResetDeps {
  db: Knex;
  mailer: Mailer;
  logger: Logger;
  tokenTtlS: number;
  /** Origins that reset links and post-reset redirects may point at. */
  allowedOrigins: ReadonlySet<string>;
}

/** What the database keeps of a reset token. */
export function resetTokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** 201 for an ADMIN (the ticket), 202 for everyone else (nothing). */
export type ResetRequestOutcome = { ticket: components['schemas']['PasswordResetTicket'] } | { accepted: true };

/**
 * POST /v1/users/password-reset-request. Anonymous callers learn nothing: the answer is the same whether
 * or not the user exists, and the link goes only to the owner's mailbox.
 */
export async function requestPasswordReset(
  deps: PasswordResetDeps,
  principal: Principal | undefined,
  input: components['schemas']['PasswordResetRequestBody'],
): Promise<ResetRequestOutcome> {
  // Checked before the lookup, so a refused link says nothing about the username either.
  const page = input.resetPageLink === undefined ? undefined : assertAllowedLink(input.resetPageLink, deps.allowedOrigins, 'resetPageLink');
  const isAdmin = principal !== undefined && hasAnyRole(principal, ['ADMIN']);
  const user = await findUserByUsername(deps.db, input.username);
  if (user === undefined) {
    if (isAdmin) throw new NotFoundError('User not found');
    return { accepted: true };
  }

  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(Date.now() + deps.tokenTtlS * 1000);
  await replaceResetToken(deps.db, user.id, resetTokenHash(token), expiresAt);
  if (isAdmin) return { ticket: { userId: user.id, token, expiresAt: expiresAt.toISOString() } };

  let link = `user id: ${user.id}\nreset token: ${token}`;
  if (page !== undefined) {
    page.searchParams.set('userId', user.id);
    page.searchParams.set('token', token);
    link = page.toString();
  }
  // Not awaited: how long the provider takes must not tell anyone that this user exists.
  void deps.mailer.send({
    to: user.username,
    subject: 'Reset your password',
    text:
      `Hello ${user.firstName},\n\nsomeone asked to reset the password of ${user.username}. If it was you, use this ` +
      `within ${Math.round(deps.tokenTtlS / 60)} minutes:\n\n${link}\n\nIf it was not you, ignore this e-mail; your password stays as it is.\n`,
  });
  return { accepted: true };
}
