import type { Migration } from '@platform/service-kit/database';

/** citext: usernames are unique case-insensitively, enforced by the database rather than by code. */
export const extensions: Migration = {
  name: '0001_extensions',
  up: async (db) => {
    await db.raw('CREATE EXTENSION IF NOT EXISTS citext');
  },
  down: async (db) => {
    await db.raw('DROP EXTENSION IF EXISTS citext');
  },
};
