import { type Principal, type TokenVerifier, assertBoundTo, bearerTokenOf } from '@platform/auth';
import { UnauthorizedError } from '@platform/errors';
import { type Request, Router } from 'express';
import { auditContextOf } from '../request/audit-context.ts';
import { type CallerThrottle, callerOf } from '../request/caller-throttle.ts';
import type { PasswordHasher } from '../passwords/password-hasher.ts';
import type { SessionEndings } from '../sessions/session-endings.ts';
import type { components } from '@platform/client/openapi/identity';
import type { PasswordResetDeps } from './password-reset-deps.ts';
import { asksForTicket, requestPasswordReset } from './request-password-reset.ts';
import { createResetWorkQueue } from './reset-work-queue.ts';
import { resetPassword } from './reset-password.ts';

type Schemas = components['schemas'];

/**
 * The caller behind an optional bearer token: none → anonymous; one that does not verify → 401; with
 * `binding`, one issued to another client key than the request's → 401 `Token bound to another client`
 * (CONTRACT.md part 16), as on every bearer operation.
 */
async function optionalPrincipal(req: Request, verifier: TokenVerifier, binding: boolean): Promise<Principal | undefined> {
  if (req.headers.authorization === undefined) return undefined;
  const token = bearerTokenOf(req.headers.authorization);
  if (token === undefined) throw new UnauthorizedError();
  const principal = await verifier.verify(token);
  if (binding) assertBoundTo(principal, callerOf(req).clientKeyId);
  return principal;
}

/** Password reset: asking for a token (anonymous or ADMIN) and using it (anonymous). */
export function passwordResetRouter(
  deps: PasswordResetDeps & { hasher: PasswordHasher; verifier: TokenVerifier; throttle: CallerThrottle; sessions: SessionEndings; tokenBinding: boolean },
): Router {
  const router = Router();
  const queue = createResetWorkQueue(deps.logger);
  router.post('/v1/users/password-reset-request', async (req, res) => {
    const principal = await optionalPrincipal(req, deps.verifier, deps.tokenBinding);
    // The throttle bounds the e-mails anonymous callers set off; an ADMIN's ticket is no e-mail, and anonymous
    // callers sharing its client key or address must not stop it (the gateway's rate limit bounds it).
    if (!asksForTicket(principal)) await deps.throttle.consume(callerOf(req));
    const outcome = await requestPasswordReset(deps, queue, principal, auditContextOf(req, principal), req.body as Schemas['PasswordResetRequestBody']);
    if ('ticket' in outcome) res.status(201).json(outcome.ticket);
    else res.status(202).end();
  });
  router.post('/v1/users/password-reset', async (req, res) => {
    const outcome = await resetPassword(deps, auditContextOf(req), req.body as Schemas['PasswordResetBody']);
    if ('redirectTo' in outcome) res.status(303).location(outcome.redirectTo).end();
    else res.json(outcome);
  });
  return router;
}
