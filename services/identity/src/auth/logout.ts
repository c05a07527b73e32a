import type { AuthServices } from './auth-services.ts';
import { endSession } from './sessions.repository.ts';

/**
 * POST /v1/auth/logout: a token whose signature verifies goes on the blacklist until its `exp` and its
 * session ends. An expired token still ends its session (the blacklist has nothing left to do for it);
 * a token that does not verify is refused with 401 by the verifier.
 */
export async function logout(services: AuthServices, jwtToken: string): Promise<void> {
  const principal = await services.verifier.verify(jwtToken, { allowExpired: true, ignoreRevocation: true });
  await services.blacklist.revoke(principal.tokenId, principal.expiresAt);
  await endSession(services.db, principal.sessionId, 'logout');
  await services.sessions.revoke([principal.sessionId]);
}
