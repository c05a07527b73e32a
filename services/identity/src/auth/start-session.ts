import { UnauthorizedError } from '@platform/errors';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import { recordSuccessfulLogin } from '../user-records/users.repository.ts';
import type { UserRecord } from '../user-records/user.ts';
import type { AuthServices, AuthenticationResult } from './auth-services.ts';
import { newRefreshToken, refreshTokenHash } from '../sessions/refresh-token.ts';
import { createSession, insertRefreshToken } from '../sessions/sessions.repository.ts';
import { recordIssuedAccessToken } from '../sessions/revoked-tokens.ts';
import { needsSecondFactor } from '../factor-records/factors.repository.ts';
import { deadlineTransaction } from '@platform/service-kit/database';

/**
 * Opens a session for a user who just proved who they are, and hands out its first tokens: the failure
 * count cleared, the session (with the client key and address it was opened from), its refresh token and
 * the `login.succeeded` event in one transaction, on the user's row as it is now, locked. The token
 * carries the roles and username read there, not those read before the password was checked: a
 * demotion, block or password change that raced the login either wins (the login is refused, or gets
 * the new roles) or waits for it and then ends the new session too (CONTRACT.md part 4).
 */
export async function startSession(services: AuthServices, user: UserRecord, audit: AuditContext): Promise<AuthenticationResult> {
  const refreshToken = newRefreshToken();
  const { current, access } = await deadlineTransaction(services.db, async (trx) => {
    // The password alone does not complete the login of a user who must show a second factor: its wrong
    // codes stay counted (CONTRACT.md part 15), so that logging in again never buys more guesses.
    const complete = !(await needsSecondFactor(trx, user, services.secondFactorRequiredRoles));
    const now = await recordSuccessfulLogin(trx, user, { clearFailures: complete });
    if (now === undefined) {
      throw new UnauthorizedError('Bad Credentials', { cause: new Error('the user changed while its password was checked (status or password)') });
    }
    const session = await createSession(trx, user.id, { clientKeyId: audit.clientKeyId, sourceAddress: audit.sourceAddress });
    await insertRefreshToken(trx, {
      sessionId: session.id,
      tokenHash: refreshTokenHash(refreshToken),
      expiresAt: new Date(Date.now() + services.refreshTokenTtlS * 1000),
    });
    await insertAuditEvent(trx, audit, { type: 'login.succeeded', subjectUserId: user.id, details: { sessionId: session.id } });
    const issued = services.accessTokens.issue({
      userId: now.id,
      username: now.username,
      roles: now.roles,
      sessionId: session.id,
      sessionCreatedAt: session.createdAt,
      // The password alone: a user with a factor, or a role that requires one, shows it next.
      aal: 1,
      secondFactorRequired: await needsSecondFactor(trx, now, services.secondFactorRequiredRoles),
      clientKeyId: audit.clientKeyId,
    });
    // Recorded with the session, so that its tokens can be revoked while it lives on (session-endings.ts).
    await recordIssuedAccessToken(trx, { tokenId: issued.jti, sessionId: session.id, expiresAt: issued.expiresAt });
    return { current: now, access: issued };
  });
  return { username: current.username, type: 'Bearer', accessToken: access.token, refreshToken };
}
