import type { Jwks } from '@platform/auth';
import { type RequestHandler, Router } from 'express';
import { jsonRepresentation, noneMatchHits } from '@platform/service-kit';
import { auditContextOf } from '../request/audit-context.ts';
import type { components } from '@platform/client/openapi/identity';
import type { AuthServices } from './auth-services.ts';
import { login } from './login.ts';
import { callerOf } from '../request/caller-throttle.ts';
import { logout } from './logout.ts';
import { refreshTokens } from './refresh.ts';

type Schemas = components['schemas'];

/** Login, refresh, logout and the public keys. Bodies were checked against openapi.yaml already. */
export function authRouter(services: AuthServices, jwks: Jwks): Router {
  const router = Router();
  router.post('/v1/auth/login', async (req, res) => {
    const body = req.body as Schemas['LoginRequest'];
    res.json(await login(services, body, callerOf(req), auditContextOf(req)));
  });
  router.post('/v1/auth/refresh', async (req, res) => {
    const body = req.body as Schemas['RefreshRequest'];
    res.json(await refreshTokens(services, body.refreshToken, auditContextOf(req)));
  });
  router.post('/v1/auth/logout', async (req, res) => {
    const body = req.body as Schemas['LogoutRequest'];
    await logout(services, body.jwtToken, auditContextOf(req));
    res.status(200).end();
  });
  router.get('/.well-known/jwks.json', jwksHandler(jwks));
  return router;
}

/**
 * The key set, serialized once with a strong ETag over it: the gateway and risk re-validate it every few
 * seconds (so that a withdrawn key stops verifying at once), and while it is unchanged each check is a
 * 304 without a body. Replicas with the same keys serve the same ETag.
 */
function jwksHandler(jwks: Jwks): RequestHandler {
  const { body, etag } = jsonRepresentation(jwks);
  return (req, res) => {
    // For caches other than the verifiers'; a short max-age spares the service a burst after a deploy.
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.setHeader('ETag', etag);
    if (noneMatchHits(req.get('if-none-match'), etag)) {
      res.status(304).end();
      return;
    }
    res.type('application/json').send(body);
  };
}
