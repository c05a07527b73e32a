import type { TokenVerifier } from '@platform/auth';
import type { Knex } from '@platform/service-kit/database';
import type { SessionEndings } from './session-endings.ts';

/** What the sessions component works with (GET and DELETE /v1/auth/sessions); made once in app.ts. */
export interface SessionServices {
  db: Knex;
  /** Verifies this service's own tokens (local keys and the blacklist). */
  verifier: TokenVerifier;
  /** The one way a session ends: in a transaction, published to the blacklist after the commit. */
  sessions: SessionEndings;
  /** Absolute lifetime of a session, from login: no refresh after it (SESSION_MAX_LIFETIME_S). */
  sessionMaxLifetimeS: number;
}
