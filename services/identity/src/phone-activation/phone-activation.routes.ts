import { type TokenVerifier, bearerAuth, principalOf } from '@platform/auth';
import { Router } from 'express';
import { auditContextOf } from '../request/audit-context.ts';
import type { components } from '@platform/client/openapi/identity';
import { activatePhoneNumber } from './activate-phone-number.ts';
import { type PhoneActivationDeps, requestPhoneActivation } from './request-phone-activation.ts';

type Schemas = components['schemas'];

/** Phone activation: sending the code, and confirming it. Owner or ADMIN. */
export function phoneActivationRouter(deps: PhoneActivationDeps & { verifier: TokenVerifier }): Router {
  const router = Router();
  const authenticated = bearerAuth(deps.verifier);
  router.post('/v1/accounts/phone-number-activation-request', authenticated, async (req, res) => {
    const principal = principalOf(req);
    res.json(await requestPhoneActivation(deps, principal, auditContextOf(req, principal), req.body as Schemas['PhoneActivationRequestBody']));
  });
  router.post('/v1/accounts/phone-number-activation', authenticated, async (req, res) => {
    const principal = principalOf(req);
    res.json(await activatePhoneNumber(deps, principal, auditContextOf(req, principal), req.body as Schemas['PhoneActivationBody']));
  });
  return router;
}
