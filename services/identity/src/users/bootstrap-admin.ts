import type { Knex, Logger } from '@platform/service-kit';
import type { PasswordHasher } from '../auth/password-hasher.ts';
import { insertUserIfAbsent } from './users.repository.ts';

/**
 * Makes sure the configured ADMIN exists (CONTRACT.md part 9). An existing user of that name is never
 * touched, so changing BOOTSTRAP_ADMIN_PASSWORD later does not reset anyone's password.
 */
export async function ensureBootstrapAdmin(
  deps: { db: Knex; hasher: PasswordHasher; logger: Logger },
  credentials: { username: string; password: string },
): Promise<void> {
  const created = await insertUserIfAbsent(deps.db, {
    username: credentials.username,
    passwordHash: await deps.hasher.hash(credentials.password),
    firstName: 'Platform',
    lastName: 'Administrator',
    locale: 'en_US',
    timezone: 'UTC',
    roles: ['ADMIN'],
    status: 'ACTIVE',
  });
  if (created !== undefined) deps.logger.info({ userId: created.id, username: created.username }, 'bootstrap ADMIN created');
}
