import type { Migration } from '@platform/service-kit/database';

const BEFORE = `'logout', 'refresh-token-reuse', 'user-changed', 'password-reset'`;
// user-blocked: the block after failed logins; username-changed: the login and recovery address moved;
// max-lifetime: the session outlived SESSION_MAX_LIFETIME_S (CONTRACT.md part 4).
const AFTER = `${BEFORE}, 'user-blocked', 'username-changed', 'max-lifetime'`;

/** More reasons for which a session ends. */
export const sessionEndReasons: Migration = {
  name: '0005_session_end_reasons',
  up: async (db) => {
    await db.raw(`
      ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
      ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check CHECK (revoked_reason IN (${AFTER}));
    `);
  },
  down: async (db) => {
    await db.raw(`
      UPDATE sessions SET revoked_reason = 'user-changed' WHERE revoked_reason NOT IN (${BEFORE});
      ALTER TABLE sessions DROP CONSTRAINT sessions_revoked_reason_check;
      ALTER TABLE sessions ADD CONSTRAINT sessions_revoked_reason_check CHECK (revoked_reason IN (${BEFORE}));
    `);
  },
};
