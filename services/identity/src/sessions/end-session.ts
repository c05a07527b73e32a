import { type Principal, hasAnyRole } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import type { AuditContext } from '../request/audit-context.ts';
import type { SessionServices } from './session-services.ts';
import { findSession } from './sessions.repository.ts';

/**
 * DELETE /v1/auth/sessions/{sessionId} (its owner or an ADMIN): the session ends, recorded, and its access
 * tokens are refused everywhere at once (the shared blacklist). Unknown, ended already, or another user's
 * (for anyone but an ADMIN): the same 404, so that no one learns which session ids exist.
 */
export async function endSession(services: SessionServices, principal: Principal, audit: AuditContext, givenSessionId: string): Promise<void> {
  const session = await findSession(services.db, canonicalUuid(givenSessionId));
  if (session === undefined || (session.userId !== principal.userId && !hasAnyRole(principal, ['ADMIN']))) throw new NotFoundError('Session not found');
  const ended = await services.sessions.transaction((_trx, ending) => ending.one(audit, session, 'revoked'));
  if (!ended) throw new NotFoundError('Session not found');
}
