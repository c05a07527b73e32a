import { TOKEN_BOUND_ELSEWHERE_MESSAGE, isBoundElsewhere } from '@platform/auth';
import { UnauthorizedError } from '@platform/errors';
import { currentRequestLog } from '@platform/service-kit';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import { findUserById } from '../user-records/users.repository.ts';
import type { AuthServices, AuthenticationResult } from './auth-services.ts';
import { newRefreshToken, refreshTokenFault, refreshTokenHash } from '../sessions/refresh-token.ts';
import { insertRefreshToken, lockRefreshToken, markRefreshTokenUsed, touchSession } from '../sessions/sessions.repository.ts';
import { needsSecondFactor } from '../factor-records/factors.repository.ts';
import { recordIssuedAccessToken } from '../sessions/revoked-tokens.ts';

function refused(reason: string): UnauthorizedError {
  return new UnauthorizedError('Bad Credentials', { cause: new Error(reason) });
}

/**
 * POST /v1/auth/refresh: trades a refresh token for a new pair. The token is retired in the same
 * transaction that stores its successor; presenting a retired token again means it was copied, so
 * the whole session ends (RFC 9700 refresh token rotation).
 */
export async function refreshTokens(services: AuthServices, refreshToken: string, audit: AuditContext): Promise<AuthenticationResult> {
  const next = newRefreshToken();
  const outcome = await services.sessions.transaction(async (trx, ending) => {
    const record = await lockRefreshToken(trx, refreshTokenHash(refreshToken));
    if (record === undefined) return { ok: false, reason: 'unknown refresh token' } as const;
    const session = { id: record.sessionId, userId: record.userId };
    // Presented under another client key than the one that logged in (CONTRACT.md part 16): refused, and
    // left as it was, so the session's own client keeps refreshing. Before every other verdict: a rotated
    // token presented again under another key proves nothing about the session's own client, and ending the
    // session for it would let any client key end another's session (revoke leaves those alone too).
    if (services.tokenBinding && isBoundElsewhere({ clientKeyId: record.sessionClientKeyId ?? undefined }, audit.clientKeyId ?? undefined)) {
      return { ok: false, reason: `refresh token bound to client key ${record.sessionClientKeyId}`, bound: true } as const;
    }
    const fault = refreshTokenFault(record, services.sessionMaxLifetimeS);
    if (fault === 'rotated') {
      await insertAuditEvent(trx, audit, { type: 'refresh_token.reused', subjectUserId: record.userId, details: { sessionId: record.sessionId } });
      await ending.one(audit, session, 'refresh-token-reuse');
      return { ok: false, reason: 'rotated refresh token presented again; session ended', ended: record.sessionId } as const;
    }
    if (fault === 'ended') return { ok: false, reason: 'session ended' } as const;
    if (fault === 'expired') return { ok: false, reason: 'refresh token expired' } as const;
    // Rotation alone would let a session live forever; a stolen one too. Past its absolute lifetime it ends.
    if (fault === 'outlived') {
      await ending.one(audit, session, 'max-lifetime');
      return { ok: false, reason: 'session outlived its maximum lifetime', ended: record.sessionId } as const;
    }
    const user = await findUserById(trx, record.userId);
    if (user === undefined || user.status !== 'ACTIVE') {
      await ending.one(audit, session, 'user-changed');
      return { ok: false, reason: 'user is not active', ended: record.sessionId } as const;
    }
    await markRefreshTokenUsed(trx, record.id);
    await touchSession(trx, record.sessionId);
    await insertRefreshToken(trx, {
      sessionId: record.sessionId,
      tokenHash: refreshTokenHash(next),
      expiresAt: new Date(Date.now() + services.refreshTokenTtlS * 1000),
      parentId: record.id,
    });
    // The session's level, as the second factor left it (CONTRACT.md part 15: a refresh keeps it), read
    // under the session's lock: a second factor shown meanwhile is seen, and so is a factor just made active.
    const access = services.accessTokens.issue({
      userId: user.id,
      username: user.username,
      roles: user.roles,
      sessionId: record.sessionId,
      sessionCreatedAt: record.sessionCreatedAt,
      aal: record.sessionAal,
      secondFactorRequired: await needsSecondFactor(trx, user, services.secondFactorRequiredRoles),
      clientKeyId: record.sessionClientKeyId,
    });
    // Recorded with the rotation, so that the session's tokens can be revoked while it lives on (session-endings.ts).
    await recordIssuedAccessToken(trx, { tokenId: access.jti, sessionId: record.sessionId, expiresAt: access.expiresAt });
    return { ok: true, user, access } as const;
  });
  if (!outcome.ok) {
    if ('ended' in outcome && outcome.ended !== undefined) {
      currentRequestLog(services.logger).warn({ sessionId: outcome.ended, reason: outcome.reason }, 'session ended at refresh');
    }
    if ('bound' in outcome) throw new UnauthorizedError(TOKEN_BOUND_ELSEWHERE_MESSAGE, { cause: new Error(outcome.reason) });
    throw refused(outcome.reason);
  }
  const { user, access } = outcome;
  return { username: user.username, type: 'Bearer', accessToken: access.token, refreshToken: next };
}
