import type { Migration } from '@platform/service-kit/database';
import { auditTypes, setAuditTypes } from './audit-types.ts';

const TYPES_ADDED = ['access_token.revoked'];

/**
 * Access tokens revoked alone, their session living on (CONTRACT.md part 16: `POST /v1/auth/revoke` of an
 * access token; part 15: the `aal` 1 token a second factor replaced). Kept while a verifier could accept
 * the token, so that a Redis that lost its data is re-seeded with them too (part 13).
 */
export const revokedTokens: Migration = {
  name: '0015_revoked_tokens',
  up: async (db) => {
    await db.raw(`
      CREATE TABLE revoked_tokens (
        -- The token's jti.
        token_id text PRIMARY KEY CHECK (length(token_id) BETWEEN 1 AND 200),
        session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        -- The token's exp: past it (and the clock tolerance) the row has nothing left to do.
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX revoked_tokens_by_expiry ON revoked_tokens (expires_at);
    `);
    await setAuditTypes(db, [...new Set([...(await auditTypes(db)), ...TYPES_ADDED])]);
  },
  down: async (db) => {
    await db.raw(`
      DELETE FROM audit_events WHERE type IN (${TYPES_ADDED.map((type) => `'${type}'`).join(', ')});
      DROP TABLE IF EXISTS revoked_tokens;
    `);
    await setAuditTypes(db, (await auditTypes(db)).filter((type) => !TYPES_ADDED.includes(type)));
  },
};
