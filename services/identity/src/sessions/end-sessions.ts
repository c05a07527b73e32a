import type { Principal } from '@platform/auth';
import type { AuditContext } from '../request/audit-context.ts';
import type { SessionServices } from './session-services.ts';
import { sessionsOwner } from './sessions-owner.ts';

/**
 * DELETE /v1/auth/sessions: every session of the caller (the current one too), or for an ADMIN of
 * `?userId=`, ends, recorded; their access tokens are refused everywhere at once.
 */
export async function endAllSessions(services: SessionServices, principal: Principal, audit: AuditContext, requestedUserId: string | undefined): Promise<void> {
  const userId = await sessionsOwner(services.db, principal, requestedUserId);
  await services.sessions.transaction((_trx, ending) => ending.allOf(audit, userId, 'revoked'));
}
