import { Counter } from 'prom-client';
import type { Metrics } from '@platform/service-kit';

/**
 * Registers `identity_second_factor_verifications_total{outcome}` (a code shown at the second factor, at
 * confirmation or at a factor's removal: verified or failed) and returns the function that counts one. Many
 * failures from one user is a stolen password meeting the factor.
 */
export function secondFactorCounter(metrics: Metrics): (outcome: 'verified' | 'failed') => void {
  const verifications = new Counter({
    name: 'identity_second_factor_verifications_total',
    help: 'Second-factor codes shown, by outcome: verified, failed',
    labelNames: ['outcome'],
    registers: [metrics.registry],
  });
  for (const outcome of ['verified', 'failed'] as const) verifications.inc({ outcome }, 0);
  return (outcome) => verifications.inc({ outcome });
}
