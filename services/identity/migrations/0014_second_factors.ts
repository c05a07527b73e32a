import type { Migration } from '@platform/service-kit/database';
import { auditTypes, setAuditTypes } from './audit-types.ts';

const REASONS_BEFORE = `'logout', 'refresh-token-reuse', 'user-changed', 'password-reset', 'user-blocked', 'username-changed', 'max-lifetime', 'revoked'`;
// second-factor-failures: 5 wrong codes in the session; second-factor-changed: a factor confirmed or removed
// (every other session of the user ends), or an ADMIN's reset of the user's factors (every session ends).
const REASONS_AFTER = `${REASONS_BEFORE}, 'second-factor-failures', 'second-factor-changed'`;

const TYPES_ADDED = ['factor.enrolled', 'factor.removed', 'second_factor.verified', 'second_factor.failed'];

/**
 * Second factors (CONTRACT.md part 15): a user's TOTP factors, their recovery codes, and each session's
 * assurance level (`aal`: 1 after the password, 2 after the second factor) with its count of wrong codes.
 */
export const secondFactors: Migration = {
  name: '0014_second_factors',
  up: async (db) => {
    await db.raw(`
      CREATE TABLE second_factors (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        type text NOT NULL CHECK (type IN ('TOTP')),
        status text NOT NULL CHECK (status IN ('PENDING', 'ACTIVE')),
        -- The TOTP secret, sealed (AES-256-GCM under SECOND_FACTOR_ENCRYPTION_KEY, bound to the row's id).
        secret bytea NOT NULL,
        -- The latest TOTP step accepted: a step is used once, and no earlier one after it.
        last_step bigint,
        created_at timestamptz NOT NULL DEFAULT now(),
        confirmed_at timestamptz,
        last_used_at timestamptz,
        CHECK ((status = 'ACTIVE') = (confirmed_at IS NOT NULL))
      );
      -- One active factor of a kind per user: two confirmations racing, one wins.
      CREATE UNIQUE INDEX second_factors_one_active ON second_factors (user_id, type) WHERE status = 'ACTIVE';
      CREATE INDEX second_factors_by_user ON second_factors (user_id);

      -- Only the SHA-256 of a recovery code is kept (80 random bits: a fast hash is enough).
      CREATE TABLE recovery_codes (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        factor_id uuid NOT NULL REFERENCES second_factors (id) ON DELETE CASCADE,
        code_hash bytea NOT NULL CHECK (length(code_hash) = 32),
        used_at timestamptz,
        UNIQUE (factor_id, code_hash)
      );

      ALTER TABLE sessions
        ADD COLUMN aal smallint NOT NULL DEFAULT 1 CHECK (aal IN (1, 2)),
        ADD COLUMN second_factor_failures integer NOT NULL DEFAULT 0 CHECK (second_factor_failures >= 0);
      ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
      ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check CHECK (revoked_reason IN (${REASONS_AFTER}));
    `);
    await setAuditTypes(db, [...new Set([...(await auditTypes(db)), ...TYPES_ADDED])]);
  },
  down: async (db) => {
    await db.raw(`
      DELETE FROM audit_events WHERE type IN (${TYPES_ADDED.map((type) => `'${type}'`).join(', ')});
      UPDATE sessions SET revoked_reason = 'revoked' WHERE revoked_reason IN ('second-factor-failures', 'second-factor-changed');
      ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
      ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check CHECK (revoked_reason IN (${REASONS_BEFORE}));
      ALTER TABLE sessions DROP COLUMN second_factor_failures, DROP COLUMN aal;
      DROP TABLE IF EXISTS recovery_codes, second_factors;
    `);
    await setAuditTypes(db, (await auditTypes(db)).filter((type) => !TYPES_ADDED.includes(type)));
  },
};
