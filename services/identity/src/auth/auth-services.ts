import type { TokenBlacklist, TokenVerifier } from '@platform/auth';
import type { Knex, Logger } from '@platform/service-kit';
import type { components } from '../generated/openapi.ts';
import type { Mailer } from '../notifications/mailer.ts';
import type { AccessTokenIssuer } from './access-tokens.ts';
import type { CallerThrottle } from './caller-throttle.ts';
import type { LoginOutcome } from './login-metrics.ts';
import type { PasswordHasher } from './password-hasher.ts';
import type { SessionEndings } from './session-endings.ts';

/** What the authentication use cases work with; made once in app.ts. */
export interface AuthServices {
  db: Knex;
  logger: Logger;
  hasher: PasswordHasher;
  throttle: CallerThrottle;
  accessTokens: AccessTokenIssuer;
  /** Verifies this service's own tokens (local keys and the blacklist). */
  verifier: TokenVerifier;
  blacklist: TokenBlacklist;
  /** The one way a session ends: in a transaction, published to the blacklist after the commit. */
  sessions: SessionEndings;
  mailer: Mailer;
  maxFailedLogins: number;
  refreshTokenTtlS: number;
  /** Absolute lifetime of a session, from login: no refresh after it (SESSION_MAX_LIFETIME_S). */
  sessionMaxLifetimeS: number;
  /** Keys the digest of a refused login's username that is not an address (audit/attempted-username.ts). */
  auditKey: string;
  /** Counts how a login ended, for the operators' metrics. */
  countLogin: (outcome: LoginOutcome) => void;
}

/** The authentication result of SPEC.md part 2 (openapi.yaml `AuthenticationResult`). */
export type AuthenticationResult = components['schemas']['AuthenticationResult'];
