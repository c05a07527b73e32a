import { type TokenVerifier, bearerAuth, requireAnyRole } from '@platform/auth';
import type { Knex } from '@platform/service-kit/database';
import { Router } from 'express';
import { type AuditEventsQuery, listAuditEvents } from './list-audit-events.ts';

/** The audit trail, for ADMINs. The query was checked against openapi.yaml already. */
export function auditRouter(deps: { db: Knex; verifier: TokenVerifier }): Router {
  const router = Router();
  router.get('/v1/audit/events', bearerAuth(deps.verifier), requireAnyRole('ADMIN'), async (req, res) => {
    res.json(await listAuditEvents(deps.db, req.query as AuditEventsQuery));
  });
  return router;
}
