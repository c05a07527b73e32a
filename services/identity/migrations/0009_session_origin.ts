import type { Migration } from '@platform/service-kit/database';

const BEFORE = `'logout', 'refresh-token-reuse', 'user-changed', 'password-reset', 'user-blocked', 'username-changed', 'max-lifetime'`;
// revoked: its owner or an ADMIN ended it (DELETE /v1/auth/sessions, CONTRACT.md part 11).
const AFTER = `${BEFORE}, 'revoked'`;

/**
 * What a user sees of its sessions (CONTRACT.md part 11): where each was opened (the client key and the
 * source address of the login) and when it was last used (its latest refresh). Columns are added nullable
 * so the version still running keeps inserting sessions during the rollout; its sessions show null there,
 * and `last_used_at` falls back to `created_at` when read.
 */
export const sessionOrigin: Migration = {
  name: '0009_session_origin',
  up: async (db) => {
    await db.raw(`
      ALTER TABLE sessions
        ADD COLUMN client_key_id text CHECK (length(client_key_id) BETWEEN 1 AND 255),
        ADD COLUMN source_address text CHECK (length(source_address) BETWEEN 1 AND 255),
        ADD COLUMN last_used_at timestamptz;
      -- Set after the column exists, so existing rows stay null (unknown) rather than "used at the migration".
      ALTER TABLE sessions ALTER COLUMN last_used_at SET DEFAULT now();

      ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
      ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check CHECK (revoked_reason IN (${AFTER}));

      -- GET /v1/auth/sessions: a user's live sessions, newest first, in keyset pages; it also serves ending
      -- every session of a user, which the index it replaces (user_id alone) did.
      CREATE INDEX sessions_live_by_user_newest ON sessions (user_id, created_at DESC, id DESC) WHERE revoked_at IS NULL;
      DROP INDEX sessions_live_by_user;
    `);
  },
  down: async (db) => {
    await db.raw(`
      CREATE INDEX sessions_live_by_user ON sessions (user_id) WHERE revoked_at IS NULL;
      DROP INDEX sessions_live_by_user_newest;
      UPDATE sessions SET revoked_reason = 'logout' WHERE revoked_reason = 'revoked';
      ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
      ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check CHECK (revoked_reason IN (${BEFORE}));
      ALTER TABLE sessions DROP COLUMN client_key_id, DROP COLUMN source_address, DROP COLUMN last_used_at;
    `);
  },
};
