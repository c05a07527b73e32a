import { assertAnyRole, bearerAuth, principalOf } from '@platform/auth';
import { Router } from 'express';
import type { components } from '@platform/client/openapi/identity';
import { auditContextOf } from '../request/audit-context.ts';
import { type FactorProof, type SecondFactorServices, confirmTotp, enrollTotp, listFactors, removeFactor, resetUserFactors, verifySecondFactor } from './second-factors.ts';

type Schemas = components['schemas'];

/**
 * The second factor (CONTRACT.md part 15): enrolment and the second factor itself take an `aal` 1 token
 * (they are how a user gets past it); the ADMIN's reset of another user's factors does not. Bodies were
 * checked against openapi.yaml already.
 */
export function secondFactorRouter(services: SecondFactorServices): Router {
  const router = Router();
  const firstFactor = bearerAuth(services.verifier, { firstFactorSuffices: true });
  const full = bearerAuth(services.verifier);
  router.post('/v1/auth/second-factor', firstFactor, async (req, res) => {
    const principal = principalOf(req);
    res.json(await verifySecondFactor(services, principal, auditContextOf(req, principal), req.body as FactorProof));
  });
  router.get('/v1/auth/factors', firstFactor, async (req, res) => {
    res.json(await listFactors(services, principalOf(req)));
  });
  router.post('/v1/auth/factors/totp', firstFactor, async (req, res) => {
    res.status(201).json(await enrollTotp(services, principalOf(req)));
  });
  router.post('/v1/auth/factors/totp/confirm', firstFactor, async (req, res) => {
    const principal = principalOf(req);
    res.json(await confirmTotp(services, principal, auditContextOf(req, principal), req.body as Schemas['ConfirmTotpRequest']));
  });
  router.delete('/v1/auth/factors/:factorId', firstFactor, async (req, res) => {
    const principal = principalOf(req);
    const proof = req.body !== undefined && Object.keys(req.body as object).length > 0 ? (req.body as FactorProof) : undefined;
    await removeFactor(services, principal, auditContextOf(req, principal), req.params.factorId as string, proof);
    res.status(200).end();
  });
  router.delete('/v1/users/:userId/factors', full, async (req, res) => {
    const principal = principalOf(req);
    assertAnyRole(principal, ['ADMIN']);
    await resetUserFactors(services, principal, auditContextOf(req, principal), req.params.userId as string);
    res.status(200).end();
  });
  return router;
}
