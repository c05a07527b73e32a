import type { Migration } from '@platform/service-kit/database';

/**
 * The access tokens issued to each session while a verifier could accept them, so that a session's tokens
 * can be revoked without ending it (CONTRACT.md part 15: once a user's second factor is active, or a session
 * shows it, no `aal` 1 token of the session works on; every one it was given, not only the one presented).
 */
export const accessTokens: Migration = {
  name: '0016_access_tokens',
  up: async (db) => {
    await db.raw(`
      CREATE TABLE access_tokens (
        -- The token's jti.
        token_id text PRIMARY KEY CHECK (length(token_id) BETWEEN 1 AND 200),
        session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        -- The token's exp: past it (and the clock tolerance) the row has nothing left to do.
        expires_at timestamptz NOT NULL,
        issued_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX access_tokens_by_session ON access_tokens (session_id);
      CREATE INDEX access_tokens_by_expiry ON access_tokens (expires_at);
    `);
  },
  down: async (db) => {
    await db.raw('DROP TABLE IF EXISTS access_tokens');
  },
};
