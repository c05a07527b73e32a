import type { RevocationWriter, Role } from '@platform/auth';
import type { Logger } from '@platform/service-kit';
import type { components } from '@platform/client/openapi/identity';
import type { Mailer } from '../notifications/mailer.ts';
import type { PasswordHasher } from '../passwords/password-hasher.ts';
import type { CallerThrottle } from '../request/caller-throttle.ts';
import type { SessionServices } from '../sessions/session-services.ts';
import type { AccessTokenIssuer } from './access-tokens.ts';
import type { LoginOutcome } from './login-metrics.ts';

/** What the authentication use cases work with (the sessions component's, and more); made once in app.ts. */
export interface AuthServices extends SessionServices {
  logger: Logger;
  hasher: PasswordHasher;
  throttle: CallerThrottle;
  accessTokens: AccessTokenIssuer;
  /** Revokes one access token at logout (its session ends through `sessions`), or alone (sessions/revoked-tokens.ts). */
  revocations: Pick<RevocationWriter, 'revoke' | 'missed'>;
  mailer: Mailer;
  maxFailedLogins: number;
  refreshTokenTtlS: number;
  /** Keys the digest of a refused login's username that is not an address (audit/attempted-username.ts). */
  auditKey: string;
  /** Counts how a login ended, for the operators' metrics. */
  countLogin: (outcome: LoginOutcome) => void;
  /** SECOND_FACTOR_REQUIRED_ROLES: tokens of their holders need the second factor, factor or not (CONTRACT.md part 15). */
  secondFactorRequiredRoles: readonly Role[];
  /** TOKEN_BINDING=on: a refresh token or a logout's token of a session opened under another client key is refused (CONTRACT.md part 16). */
  tokenBinding: boolean;
}

/** The authentication result of SPEC.md part 2 (openapi.yaml `AuthenticationResult`). */
export type AuthenticationResult = components['schemas']['AuthenticationResult'];
