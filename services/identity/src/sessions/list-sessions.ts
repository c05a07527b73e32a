import type { Principal } from '@platform/auth';
import type { components, operations } from '@platform/client/openapi/identity';
import { decodeCursor } from '../pagination/cursor.ts';
import { type Page, type RawQuery, limitOf, pageOf } from '../pagination/page.ts';
import type { SessionServices } from './session-services.ts';
import { sessionsOwner } from './sessions-owner.ts';
import { findLiveSessions } from './sessions.repository.ts';

export type SessionsQuery = RawQuery<NonNullable<operations['listSessions']['parameters']['query']>>;
type SessionResponse = components['schemas']['Session'];

/**
 * GET /v1/auth/sessions: the live sessions of the caller (or, for an ADMIN, of `?userId=`), newest first,
 * each with where it was opened, when it was last refreshed, when it ends, and whether the caller's own
 * token belongs to it.
 */
export async function listSessions(services: SessionServices, principal: Principal, query: SessionsQuery): Promise<Page<SessionResponse>> {
  const after = decodeCursor('sessions', query.cursor);
  const userId = await sessionsOwner(services.db, principal, query.userId);
  const limit = limitOf(query.limit);
  const rows = await findLiveSessions(services.db, userId, services.sessionMaxLifetimeS, limit + 1, after);
  return pageOf('sessions', rows, limit, (session) => ({
    sessionId: session.id,
    createdAt: session.createdAt.toISOString(),
    lastUsedAt: session.lastUsedAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
    clientKeyId: session.clientKeyId,
    sourceAddress: session.sourceAddress,
    current: session.id === principal.sessionId,
  }));
}
