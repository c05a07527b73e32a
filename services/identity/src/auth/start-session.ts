import type { UserRecord } from '../users/user.ts';
import type { AuthServices, AuthenticationResult } from './auth-services.ts';
import { newRefreshToken, refreshTokenHash } from './refresh-token.ts';
import { createSession, insertRefreshToken } from './sessions.repository.ts';

/** Opens a session for a user who just proved who they are, and hands out its first tokens. */
export async function startSession(services: AuthServices, user: UserRecord): Promise<AuthenticationResult> {
  const refreshToken = newRefreshToken();
  const sessionId = await services.db.transaction(async (trx) => {
    const id = await createSession(trx, user.id);
    await insertRefreshToken(trx, {
      sessionId: id,
      tokenHash: refreshTokenHash(refreshToken),
      expiresAt: new Date(Date.now() + services.refreshTokenTtlS * 1000),
    });
    return id;
  });
  const access = services.accessTokens.issue({ userId: user.id, username: user.username, roles: user.roles, sessionId });
  return { username: user.username, type: 'Bearer', accessToken: access.token, refreshToken };
}
