import type { Migration } from '@platform/service-kit/database';

/**
 * Password reset tokens (CONTRACT.md part 5): only the SHA-256 of a 256-bit token is kept; a token is
 * used once, expires, and a newer request for the same user voids the older ones.
 */
export const passwordResetTokens: Migration = {
  name: '0003_password_reset_tokens',
  up: async (db) => {
    await db.raw(`
      CREATE TABLE password_reset_tokens (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        token_hash bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        voided_at timestamptz,
        CHECK (expires_at > created_at),
        CHECK (used_at IS NULL OR voided_at IS NULL)
      );
      -- At most one usable token per user: the database, not only the code, voids older ones.
      CREATE UNIQUE INDEX password_reset_tokens_one_open_per_user ON password_reset_tokens (user_id)
        WHERE used_at IS NULL AND voided_at IS NULL;
    `);
  },
  down: async (db) => {
    await db.raw('DROP TABLE IF EXISTS password_reset_tokens');
  },
};
