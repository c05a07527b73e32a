import { Counter } from 'prom-client';
import type { Metrics } from '@platform/service-kit';

/**
 * How a login ended. Never in an answer (all refusals are one 401, CONTRACT.md part 4), only in this
 * operators' metric: many unknown users and wrong passwords from many callers is what credential
 * stuffing looks like, many `throttled` one caller trying.
 */
export type LoginOutcome = 'succeeded' | 'unknown_user' | 'wrong_password' | 'not_active' | 'throttled';

/** Registers `identity_login_attempts_total{outcome}` and returns the function that counts one login. */
export function loginAttemptCounter(metrics: Metrics): (outcome: LoginOutcome) => void {
  const attempts = new Counter({
    name: 'identity_login_attempts_total',
    help: 'Login attempts by outcome: succeeded, unknown_user, wrong_password, not_active, throttled',
    labelNames: ['outcome'],
    registers: [metrics.registry],
  });
  for (const outcome of ['succeeded', 'unknown_user', 'wrong_password', 'not_active', 'throttled'] as const) attempts.inc({ outcome }, 0);
  return (outcome) => attempts.inc({ outcome });
}
