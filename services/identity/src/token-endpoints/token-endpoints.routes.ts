import type { Request } from 'express';
import { Router } from 'express';
import { INTROSPECTION_KEY_MESSAGE } from '@platform/auth';
import { ForbiddenError } from '@platform/errors';
import type { components } from '@platform/client/openapi/identity';
import { auditContextOf } from '../request/audit-context.ts';
import { callerOf } from '../request/caller-throttle.ts';
import { type TokenEndpointServices, introspect, revoke } from './token-endpoints.ts';

type TokenRequest = components['schemas']['TokenRequest'];

const PATHS = new Set(['/v1/auth/introspect', '/v1/auth/revoke']);

/** The requests answered in RFC 6749 §5.2's error shape rather than SPEC.md's: the token endpoints' (CONTRACT.md part 16). */
export const isTokenEndpoint = (req: Request): boolean => req.method === 'POST' && PATHS.has(req.path);

/**
 * POST /v1/auth/introspect (RFC 7662) and POST /v1/auth/revoke (RFC 7009), form-encoded. Which client keys
 * may introspect is the gateway's to say (`"introspection": true`, checked before it forwards); a caller the
 * gateway does not vouch for has no client key (CONTRACT.md part 10), and so may not introspect: 403, as
 * the gateway answers a key without the right. The bodies were checked against openapi.yaml already.
 */
export function tokenEndpointsRouter(services: TokenEndpointServices): Router {
  const router = Router();
  router.post('/v1/auth/introspect', async (req, res) => {
    if (callerOf(req).clientKeyId === undefined) throw new ForbiddenError(INTROSPECTION_KEY_MESSAGE);
    const body = req.body as TokenRequest;
    const result = await introspect(services, body.token, body.token_type_hint);
    res.set('cache-control', 'no-store').json(result);
  });
  router.post('/v1/auth/revoke', async (req, res) => {
    const body = req.body as TokenRequest;
    await revoke(services, body.token, body.token_type_hint, auditContextOf(req));
    res.status(200).end();
  });
  return router;
}
