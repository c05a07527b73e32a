import { Counter } from 'prom-client';
import type { Metrics } from '@platform/service-kit';
import type { PasswordHasher } from './password-hasher.ts';

/**
 * Registers `identity_password_checks_refused_total{reason}`, read from the hasher when scraped: `busy`, a
 * check that would have ended past its request's deadline, refused at once or at its turn; `answered`, one whose request the
 * deadline answered while it waited. Either growing says the hashing threads (PASSWORD_HASH_THREADS) or the
 * cost (BCRYPT_COST) do not fit the logins that come.
 */
export function passwordRefusalCounter(metrics: Metrics, hasher: Pick<PasswordHasher, 'refusals'>): void {
  new Counter({
    name: 'identity_password_checks_refused_total',
    help: 'Password checks and hashes refused without being made, by reason: busy (would end past the deadline), answered (the deadline answered first)',
    labelNames: ['reason'],
    registers: [metrics.registry],
    collect() {
      const { busy, answered } = hasher.refusals();
      this.reset();
      this.inc({ reason: 'busy' }, busy);
      this.inc({ reason: 'answered' }, answered);
    },
  });
}
