import { type Principal, assertSelfOrRole } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import { canonicalUuid } from '../accounts/canonical-uuid.ts';
import type { AuditContext } from '../audit/audit-event.ts';
import type { AuthServices } from './auth-services.ts';
import { endSessionOfUser } from './end-sessions.ts';
import { findSession } from './sessions.repository.ts';

/**
 * DELETE /v1/auth/sessions/{sessionId} (its owner or an ADMIN): the session ends, recorded, and its access
 * tokens are refused everywhere at once (the shared blacklist). Unknown, or ended already: 404.
 */
export async function revokeSession(services: AuthServices, principal: Principal, audit: AuditContext, givenSessionId: string): Promise<void> {
  const session = await findSession(services.db, canonicalUuid(givenSessionId));
  if (session === undefined) throw new NotFoundError('Session not found');
  assertSelfOrRole(principal, session.userId, ['ADMIN']);
  const ended = await services.db.transaction((trx) => endSessionOfUser(trx, audit, session, 'revoked'));
  if (!ended) throw new NotFoundError('Session not found');
  await services.sessions.revoke([session.id]);
}
