import type { Jwks } from '@platform/auth';
import { Router } from 'express';
import { auditContextOf } from '../audit/audit-context.ts';
import type { components } from '../generated/openapi.ts';
import type { AuthServices } from './auth-services.ts';
import { login } from './login.ts';
import { callerOf } from './caller-throttle.ts';
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
  router.get('/.well-known/jwks.json', (_req, res) => {
    // Verifiers cache it anyway; a short max-age spares the service a burst after a deploy.
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(jwks);
  });
  return router;
}
