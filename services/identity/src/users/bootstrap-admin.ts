import type { Logger } from '@platform/service-kit';
import { type Knex, deadlineTransaction } from '@platform/service-kit/database';
import { SYSTEM_AUDIT_CONTEXT } from '../request/audit-context.ts';
import { insertAuditEvent } from '../audit/audit.repository.ts';
import type { PasswordHasher } from '../passwords/password-hasher.ts';
import { userCreated } from './user-events.ts';
import { insertUserIfAbsent } from '../user-records/users.repository.ts';

/**
 * Makes sure the configured ADMIN exists (CONTRACT.md part 9). An existing user of that name is never
 * touched, so changing BOOTSTRAP_ADMIN_PASSWORD later does not reset anyone's password.
 */
export async function ensureBootstrapAdmin(
  deps: { db: Knex; hasher: PasswordHasher; logger: Logger },
  credentials: { username: string; password: string },
): Promise<void> {
  const passwordHash = await deps.hasher.hash(credentials.password);
  const created = await deadlineTransaction(deps.db, async (trx) => {
    const user = await insertUserIfAbsent(trx, {
      username: credentials.username,
      passwordHash,
      firstName: 'Platform',
      lastName: 'Administrator',
      locale: 'en_US',
      timezone: 'UTC',
      roles: ['ADMIN'],
      status: 'ACTIVE',
    });
    if (user !== undefined) await insertAuditEvent(trx, SYSTEM_AUDIT_CONTEXT, userCreated(user, { bootstrap: true }));
    return user;
  });
  if (created !== undefined) deps.logger.info({ userId: created.id, username: created.username }, 'bootstrap ADMIN created');
}
