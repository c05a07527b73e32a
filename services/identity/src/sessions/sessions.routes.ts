import { bearerAuth, principalOf } from '@platform/auth';
import { Router } from 'express';
import { auditContextOf } from '../request/audit-context.ts';
import type { SessionServices } from './session-services.ts';
import { type SessionsQuery, listSessions } from './list-sessions.ts';
import { endSession } from './end-session.ts';
import { endAllSessions } from './end-sessions.ts';

/** A user's own sessions: list them, end one or all (an ADMIN: anyone's). Queries were checked against openapi.yaml. */
export function sessionsRouter(services: SessionServices): Router {
  const router = Router();
  const authenticated = bearerAuth(services.verifier);
  // Listing its sessions needs no second factor (CONTRACT.md part 15): a user meeting the factor's demand can see where it is logged in.
  router.get('/v1/auth/sessions', bearerAuth(services.verifier, { firstFactorSuffices: true }), async (req, res) => {
    res.json(await listSessions(services, principalOf(req), req.query as SessionsQuery));
  });
  router.delete('/v1/auth/sessions', authenticated, async (req, res) => {
    const principal = principalOf(req);
    await endAllSessions(services, principal, auditContextOf(req, principal), (req.query as SessionsQuery).userId);
    res.status(204).end();
  });
  router.delete('/v1/auth/sessions/:sessionId', authenticated, async (req, res) => {
    const principal = principalOf(req);
    await endSession(services, principal, auditContextOf(req, principal), req.params.sessionId as string);
    res.status(204).end();
  });
  return router;
}
