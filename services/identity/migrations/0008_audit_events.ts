import type { Migration } from '@platform/service-kit/database';

/** The event types of CONTRACT.md part 11, and the security-relevant changes this service records besides. */
const TYPES = [
  'login.succeeded',
  'login.failed',
  'user.created',
  'user.updated',
  'user.username_changed',
  'user.password_changed',
  'user.roles_changed',
  'user.status_changed',
  'user.blocked',
  'user.unblocked',
  'password_reset.requested',
  'password_reset.completed',
  'session.revoked',
  'refresh_token.reused',
  'account.created',
  'account.updated',
  'phone.code_sent',
  'phone.verified',
]
  .map((type) => `'${type}'`)
  .join(', ');

/**
 * The audit trail (CONTRACT.md part 11): one row per security-relevant change, written in the transaction
 * of the change. No foreign keys: the trail must outlive what it names, and an attempt on an unknown user
 * (a failed login) names nobody. Newest first (at, then seq) is the only order read, so every index ends
 * in (at, seq).
 */
export const auditEvents: Migration = {
  name: '0008_audit_events',
  up: async (db) => {
    await db.raw(`
      CREATE TABLE audit_events (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        type text NOT NULL CHECK (type IN (${TYPES})),
        -- The clock at the insert, not the transaction's start, and the insert order where two share a
        -- microsecond (the events of one change are one statement): the events of a change keep their order.
        at timestamptz NOT NULL DEFAULT clock_timestamp(),
        seq bigint GENERATED ALWAYS AS IDENTITY,
        actor_user_id uuid,
        subject_user_id uuid,
        client_key_id text CHECK (length(client_key_id) BETWEEN 1 AND 255),
        source_address text CHECK (length(source_address) BETWEEN 1 AND 255),
        request_id text CHECK (length(request_id) BETWEEN 1 AND 255),
        details jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object')
      );
      -- GET /v1/audit/events without filters (newest first, keyset pages) and the retention prune (at < cutoff).
      CREATE INDEX audit_events_by_time ON audit_events (at DESC, seq DESC);
      -- ?subjectUserId=: what happened to one user.
      CREATE INDEX audit_events_by_subject ON audit_events (subject_user_id, at DESC, seq DESC) WHERE subject_user_id IS NOT NULL;
      -- ?actorUserId=: what one user (an ADMIN, say) did.
      CREATE INDEX audit_events_by_actor ON audit_events (actor_user_id, at DESC, seq DESC) WHERE actor_user_id IS NOT NULL;
      -- ?type=: every unblock, every reused refresh token.
      CREATE INDEX audit_events_by_type ON audit_events (type, at DESC, seq DESC);
    `);
  },
  down: async (db) => {
    await db.raw('DROP TABLE IF EXISTS audit_events');
  },
};
