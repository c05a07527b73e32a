import { assertBoundTo } from '@platform/auth';
import { type AuditContext, withActor } from '../request/audit-context.ts';
import type { AuthServices } from './auth-services.ts';

/**
 * POST /v1/auth/logout: a token whose signature verifies goes on the blacklist until its `exp` and its
 * session ends. An expired token still ends its session (the blacklist has nothing left to do for it);
 * a token that does not verify is refused with 401 by the verifier. The token's user is the actor.
 */
export async function logout(services: AuthServices, jwtToken: string, audit: AuditContext): Promise<void> {
  // Any token of the user's own may end its session, one of the password alone too (CONTRACT.md part 15).
  const principal = await services.verifier.verify(jwtToken, { allowExpired: true, ignoreRevocation: true, firstFactorSuffices: true });
  // Another client's token cannot end that client's session (CONTRACT.md part 16).
  if (services.tokenBinding) assertBoundTo(principal, audit.clientKeyId ?? undefined);
  await services.revocations.revoke(principal, principal.expiresAt);
  const session = { id: principal.sessionId, userId: principal.userId };
  await services.sessions.transaction((_trx, ending) => ending.one(withActor(audit, principal.userId), session, 'logout'));
}
