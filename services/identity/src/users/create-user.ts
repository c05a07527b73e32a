import type { Principal } from '@platform/auth';
import { ConflictError } from '@platform/errors';
import { type Knex, deadlineTransaction } from '@platform/service-kit/database';
import type { AuditContext } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { PasswordHasher } from '../passwords/password-hasher.ts';
import type { components } from '@platform/client/openapi/identity';
import { type UserResponse, toUserResponse } from './user-response.ts';
import { assertUncommonPassword } from '../passwords/password-rules.ts';
import { assertValidUserFields } from '../user-records/user-fields.ts';
import { userCreated } from './user-events.ts';
import { insertUserIfAbsent } from '../user-records/users.repository.ts';
import { assertCallerSessionLives } from '../sessions/sessions.repository.ts';

/**
 * POST /v1/users/create (the caller is an ADMIN). One INSERT … ON CONFLICT DO NOTHING: of two
 * concurrent creates with the same username (in any letter case) exactly one wins (and is recorded, in
 * its transaction), the other gets 409.
 */
export async function createUser(
  deps: { db: Knex; hasher: PasswordHasher },
  principal: Principal,
  audit: AuditContext,
  input: components['schemas']['CreateUserRequest'],
): Promise<UserResponse> {
  assertValidUserFields(input);
  if (input.password !== undefined) assertUncommonPassword(input.password, [input.username]);
  const passwordHash = input.password === undefined ? null : await deps.hasher.hash(input.password);
  const user = await deadlineTransaction(deps.db, async (trx) => {
    // Judged when the request came; made only if the ADMIN's session outlived a change of the ADMIN in
    // flight (a demotion, a block, a logout: CONTRACT.md part 4, at once).
    await assertCallerSessionLives(trx, principal, undefined);
    const created = await insertUserIfAbsent(trx, {
      username: input.username,
      passwordHash,
      firstName: input.firstName,
      midName: input.midName ?? null,
      lastName: input.lastName,
      locale: input.locale,
      timezone: input.timezone,
      roles: input.roles,
      status: input.status,
    });
    if (created !== undefined) await insertAuditEvent(trx, audit, userCreated(created, { passwordSet: passwordHash !== null }));
    return created;
  });
  if (user === undefined) throw new ConflictError('Username already exists');
  // A new user has no account yet: createAccount makes it.
  return toUserResponse(user, undefined);
}
