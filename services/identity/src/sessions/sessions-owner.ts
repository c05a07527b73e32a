import { type Principal, assertAnyRole, assertSecondFactor } from '@platform/auth';
import { NotFoundError } from '@platform/errors';
import type { Knex } from '@platform/service-kit/database';
import { canonicalUuid } from '../request/canonical-uuid.ts';
import { findUserById } from '../user-records/users.repository.ts';

/**
 * Whose sessions a request is about: the caller's own, or with `?userId=` another user's, which only an
 * ADMIN may name (403 for anyone else, before anything is looked up; 404 for an unknown user), and only
 * with its second factor shown: listing one's own sessions needs none (CONTRACT.md part 15), another's is an
 * ADMIN's power (403 `Second factor required` on an `aal` 1 token that must show one).
 */
export async function sessionsOwner(db: Knex, principal: Principal, requested: string | undefined): Promise<string> {
  if (requested === undefined) return principal.userId;
  const userId = canonicalUuid(requested);
  if (userId === principal.userId) return userId;
  assertAnyRole(principal, ['ADMIN']);
  assertSecondFactor(principal);
  if ((await findUserById(db, userId)) === undefined) throw new NotFoundError('User not found');
  return userId;
}
