import { type TokenVerifier, bearerAuth, principalOf, requireAnyRole } from '@platform/auth';
import { Router } from 'express';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import { auditContextOf } from '../request/audit-context.ts';
import type { components } from '@platform/client/openapi/identity';
import { createUser } from './create-user.ts';
import { getUser } from './get-user.ts';
import { type UsersQuery, listUsers } from './list-users.ts';
import { unblockUser } from './unblock-user.ts';
import { type UpdateUserDeps, updateUser } from './update-user.ts';

type Schemas = components['schemas'];

/** User administration and lookup; every operation needs a bearer token. */
export function usersRouter(deps: UpdateUserDeps & { verifier: TokenVerifier }): Router {
  const router = Router();
  const authenticated = bearerAuth(deps.verifier);
  router.post('/v1/users/create', authenticated, requireAnyRole('ADMIN'), async (req, res) => {
    const principal = principalOf(req);
    res.status(201).json(await createUser(deps, principal, auditContextOf(req, principal), req.body as Schemas['CreateUserRequest']));
  });
  router.patch('/v1/users/update', authenticated, async (req, res) => {
    const principal = principalOf(req);
    res.json(await updateUser(deps, principal, auditContextOf(req, principal), req.body as Schemas['UpdateUserRequest']));
  });
  router.get('/v1/users', authenticated, requireAnyRole('ADMIN'), async (req, res) => {
    res.json(await listUsers(deps.db, req.query as UsersQuery));
  });
  router.get('/v1/users/:userId', authenticated, async (req, res) => {
    res.json(await getUser(deps.db, principalOf(req), canonicalUuid(req.params.userId as string)));
  });
  router.get('/v1/users/unblock/:userId', authenticated, requireAnyRole('ADMIN'), async (req, res) => {
    const principal = principalOf(req);
    res.json(await unblockUser(deps.db, principal, auditContextOf(req, principal), canonicalUuid(req.params.userId as string)));
  });
  return router;
}
