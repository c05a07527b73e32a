import type { Migration } from '@platform/service-kit/database';

/**
 * The indexes that keep GET /v1/users fast with a million users (CONTRACT.md part 11; the bench diary, `git show f0a4e11:bench/README.md` has
 * the figures). Every answer is in creation order, then id, paged by keyset, so each index either yields
 * that order for its filter or finds the few matching rows to sort.
 *
 * CREATE INDEX holds writes to `users` (logins count failures there) while it builds: on a large table,
 * build them beforehand with CREATE INDEX CONCURRENTLY under the same names, which this migration then
 * skips (IF NOT EXISTS).
 */
export const userSearchIndexes: Migration = {
  name: '0010_user_search_indexes',
  up: async (db) => {
    await db.raw(`
      -- A build on a large table outlives the services' statement timeout; this transaction only.
      SET LOCAL statement_timeout = 0;
      -- No filter, and ?role= for common roles: creation order straight off the index, stopping at the limit.
      CREATE INDEX IF NOT EXISTS users_by_creation ON users (created_at, id);
      -- ?status=BLOCKED: the users of one status already in creation order, stopping at the limit.
      CREATE INDEX IF NOT EXISTS users_by_status_creation ON users (status, created_at, id);
      -- ?role=ADMIN: the holders of a rare role (roles is an array: roles @> ARRAY['ADMIN']).
      CREATE INDEX IF NOT EXISTS users_by_role ON users USING gin (roles);
      -- ?q=: a case-insensitive prefix of the username, first name or last name, as LIKE 'prefix%' on lower();
      -- text_pattern_ops, so the prefix is an index range whatever the database's collation.
      CREATE INDEX IF NOT EXISTS users_username_prefix ON users (lower(username::text) text_pattern_ops);
      CREATE INDEX IF NOT EXISTS users_first_name_prefix ON users (lower(first_name) text_pattern_ops);
      CREATE INDEX IF NOT EXISTS users_last_name_prefix ON users (lower(last_name) text_pattern_ops);
      -- ?username= (exact, case-insensitive) is served by the unique citext index users_username_key.
    `);
  },
  down: async (db) => {
    await db.raw(`
      DROP INDEX IF EXISTS users_by_creation, users_by_status_creation, users_by_role,
        users_username_prefix, users_first_name_prefix, users_last_name_prefix;
    `);
  },
};
