import type { Migration } from '@platform/service-kit/database';

/**
 * Serves the re-seed of Redis's revocation mirror after Redis lost its data (CONTRACT.md part 13): the
 * sessions ended within the last access-token lifetime, `WHERE revoked_at > now() - ttl`, paged by id.
 * Partial: live sessions (most rows) are not in it.
 */
export const revokedSessionsIndex: Migration = {
  name: '0011_revoked_sessions_index',
  up: async (db) => {
    await db.raw('CREATE INDEX IF NOT EXISTS sessions_revoked_recently ON sessions (revoked_at, id) WHERE revoked_at IS NOT NULL');
  },
  down: async (db) => {
    await db.raw('DROP INDEX IF EXISTS sessions_revoked_recently');
  },
};
