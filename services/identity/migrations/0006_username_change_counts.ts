import type { Migration } from '@platform/service-kit/database';

/**
 * How often a user's username was changed by someone other than an ADMIN, per UTC day (CONTRACT.md part 4:
 * USERNAME_CHANGES_PER_DAY). Counted in the transaction of the change itself, so the cap holds under races
 * and survives a Redis loss; rows of past days are deleted when the user's next change is counted.
 */
export const usernameChangeCounts: Migration = {
  name: '0006_username_change_counts',
  up: async (db) => {
    await db.raw(`
      CREATE TABLE username_change_counts (
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        day date NOT NULL,
        changes integer NOT NULL CHECK (changes >= 1),
        PRIMARY KEY (user_id, day)
      );
    `);
  },
  down: async (db) => {
    await db.raw('DROP TABLE IF EXISTS username_change_counts');
  },
};
