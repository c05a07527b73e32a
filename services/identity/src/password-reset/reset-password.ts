import { BadRequestError } from '@platform/errors';
import type { Knex } from '@platform/service-kit/database';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { PasswordHasher } from '../passwords/password-hasher.ts';
import type { SessionEndings } from '../sessions/session-endings.ts';
import type { components } from '@platform/client/openapi/identity';
import { assertValidUserFields } from '../user-records/user-fields.ts';
import { assertUncommonPassword } from '../passwords/password-rules.ts';
import { findUserById, lockUserById, updateUserRow } from '../user-records/users.repository.ts';
import { type ResetTokenRecord, findResetToken, lockResetToken, markResetTokenUsed } from './password-reset.repository.ts';
import { assertAllowedLink } from '../request/link-allowlist.ts';
import { resetTokenHash } from './reset-token.ts';

export const RESET_DONE_MESSAGE = 'Your password has been reset; log in with the new password';
const INVALID_TOKEN = 'The password reset token is invalid, used or expired';

function isUsable(token: ResetTokenRecord | undefined): token is ResetTokenRecord {
  return token !== undefined && token.usedAt === null && token.voidedAt === null && token.expiresAt.getTime() > Date.now();
}

function invalidToken(): BadRequestError {
  return new BadRequestError(INVALID_TOKEN, { messages: [INVALID_TOKEN] });
}

/** Where to send the browser after a reset, or the message to answer with. */
export type ResetOutcome = { redirectTo: string } | { message: string };

/**
 * POST /v1/users/password-reset: consumes the token and sets the password in one transaction, and ends
 * every session of the user, recorded in the same transaction. The block of a blocked user stays
 * (CONTRACT.md part 4).
 */
export async function resetPassword(
  deps: { db: Knex; hasher: PasswordHasher; allowedOrigins: ReadonlySet<string>; sessions: SessionEndings },
  audit: AuditContext,
  input: components['schemas']['PasswordResetBody'],
): Promise<ResetOutcome> {
  // Both checks come first: a refused request must not use up the token.
  const loginPage = input.loginPageLink === undefined ? undefined : assertAllowedLink(input.loginPageLink, deps.allowedOrigins, 'loginPageLink');
  assertValidUserFields({ password: input.newPassword }, 'newPassword');
  assertUncommonPassword(input.newPassword);

  const userId = canonicalUuid(input.userId);
  const tokenHash = resetTokenHash(input.token);
  // bcrypt is the expensive step and this operation is anonymous: a made-up token must not buy a hash.
  if (!isUsable(await findResetToken(deps.db, userId, tokenHash))) throw invalidToken();
  // Only a holder of a live token gets this far, so naming the username rule reveals nothing new.
  assertUncommonPassword(input.newPassword, [(await findUserById(deps.db, userId))?.username]);

  const passwordHash = await deps.hasher.hash(input.newPassword);
  const done = await deps.sessions.transaction(async (trx, ending) => {
    // The user's row before the token's, the order in which a rename and a new request take them (the
    // user, then its tokens): the other order deadlocked with a rename, a 500 to one of the two.
    await lockUserById(trx, userId);
    // Looked at again under the lock: a concurrent reset with the same token may have used it meanwhile.
    const token = await lockResetToken(trx, userId, tokenHash);
    if (!isUsable(token)) return undefined;
    await markResetTokenUsed(trx, token.id);
    await updateUserRow(trx, userId, { passwordHash });
    await insertAuditEvent(trx, audit, { type: 'password_reset.completed', subjectUserId: userId });
    await ending.allOf(audit, userId, 'password-reset');
    return true;
  });
  if (done === undefined) throw invalidToken();

  if (loginPage === undefined) return { message: RESET_DONE_MESSAGE };
  loginPage.searchParams.set('message', RESET_DONE_MESSAGE);
  return { redirectTo: loginPage.toString() };
}
