import { type TokenVerifier, bearerAuth, principalOf } from '@platform/auth';
import type { Knex } from '@platform/service-kit/database';
import { Router } from 'express';
import { auditContextOf } from '../request/audit-context.ts';
import type { components } from '@platform/client/openapi/identity';
import { createAccount } from './create-account.ts';
import { getAccountOfUser } from './get-account.ts';
import { updateAccount } from './update-account.ts';

type Schemas = components['schemas'];

/** The one account of a user. Every operation needs a bearer token; ownership is checked per use case. */
export function accountsRouter(deps: { db: Knex; verifier: TokenVerifier }): Router {
  const router = Router();
  const authenticated = bearerAuth(deps.verifier);
  router.post('/v1/accounts/create', authenticated, async (req, res) => {
    const principal = principalOf(req);
    res.status(201).json(await createAccount(deps.db, principal, auditContextOf(req, principal), req.body as Schemas['CreateAccountRequest']));
  });
  router.patch('/v1/accounts/update', authenticated, async (req, res) => {
    const principal = principalOf(req);
    res.json(await updateAccount(deps.db, principal, auditContextOf(req, principal), req.body as Schemas['UpdateAccountRequest']));
  });
  router.get('/v1/accounts/:userId', authenticated, async (req, res) => {
    res.json(await getAccountOfUser(deps.db, principalOf(req), req.params.userId as string));
  });
  return router;
}
