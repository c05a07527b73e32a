import { type Principal, hasAnyRole } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import { canonicalUuid } from '../accounts/canonical-uuid.ts';
import type { AuditContext } from '../audit/audit-event.ts';
import type { AuthServices } from './auth-services.ts';
import { findSession } from './sessions.repository.ts';

/**
 * DELETE /v1/auth/sessions/{sessionId} (its owner or an ADMIN): the session ends, recorded, and its access
 * tokens are refused everywhere at once (the shared blacklist). Unknown, ended already, or another user's
 * (for anyone but an ADMIN): the same 404, so that no one learns which session ids exist.
 */
export async function revokeSession(services: AuthServices, principal: Principal, audit: AuditContext, givenSessionId: string): Promise<void> {
  const session = await findSession(services.db, canonicalUuid(givenSessionId));
  if (session === undefined || (session.userId !== principal.userId && !hasAnyRole(principal, ['ADMIN']))) throw new NotFoundError('Session not found');
  const ended = await services.sessions.transaction((_trx, ending) => ending.one(audit, session, 'revoked'));
  if (!ended) throw new NotFoundError('Session not found');
}
