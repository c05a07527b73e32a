import type { AuditContext } from '../audit/audit-event.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import { recordSuccessfulLogin } from '../users/users.repository.ts';
import type { UserRecord } from '../users/user.ts';
import type { AuthServices, AuthenticationResult } from './auth-services.ts';
import { newRefreshToken, refreshTokenHash } from './refresh-token.ts';
import { createSession, insertRefreshToken } from './sessions.repository.ts';

/**
 * Opens a session for a user who just proved who they are, and hands out its first tokens: the failure
 * count cleared, the session (with the client key and address it was opened from), its refresh token and
 * the `login.succeeded` event in one transaction.
 */
export async function startSession(services: AuthServices, user: UserRecord, audit: AuditContext): Promise<AuthenticationResult> {
  const refreshToken = newRefreshToken();
  const sessionId = await services.db.transaction(async (trx) => {
    await recordSuccessfulLogin(trx, user.id);
    const id = await createSession(trx, user.id, { clientKeyId: audit.clientKeyId, sourceAddress: audit.sourceAddress });
    await insertRefreshToken(trx, {
      sessionId: id,
      tokenHash: refreshTokenHash(refreshToken),
      expiresAt: new Date(Date.now() + services.refreshTokenTtlS * 1000),
    });
    await insertAuditEvent(trx, audit, { type: 'login.succeeded', subjectUserId: user.id, details: { sessionId: id } });
    return id;
  });
  const access = services.accessTokens.issue({ userId: user.id, username: user.username, roles: user.roles, sessionId });
  return { username: user.username, type: 'Bearer', accessToken: access.token, refreshToken };
}
