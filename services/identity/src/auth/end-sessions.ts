import type { Knex } from '@platform/service-kit';
import type { AuditContext, NewAuditEvent } from '../audit/audit-event.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import { type SessionEndReason, endSession, endUserSessions } from './sessions.repository.ts';

/** The `session.revoked` event of sessions that just ended. */
function sessionsRevoked(userId: string, sessionIds: readonly string[], reason: SessionEndReason): NewAuditEvent {
  return { type: 'session.revoked', subjectUserId: userId, details: { sessionIds, reason } };
}

/**
 * Ends every live session of a user in the caller's transaction and records it; returns their ids, which
 * the caller hands to the session revoker once the transaction committed.
 */
export async function endSessionsOfUser(trx: Knex.Transaction, audit: AuditContext, userId: string, reason: SessionEndReason): Promise<string[]> {
  const ended = await endUserSessions(trx, userId, reason);
  if (ended.length > 0) await insertAuditEvent(trx, audit, sessionsRevoked(userId, ended, reason));
  return ended;
}

/** Ends one session of a user in the caller's transaction and records it; false when it had ended already. */
export async function endSessionOfUser(
  trx: Knex.Transaction,
  audit: AuditContext,
  session: { id: string; userId: string },
  reason: SessionEndReason,
): Promise<boolean> {
  const ended = await endSession(trx, session.id, reason);
  if (ended) await insertAuditEvent(trx, audit, sessionsRevoked(session.userId, [session.id], reason));
  return ended;
}
