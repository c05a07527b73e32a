import { join } from 'node:path';
import type { Express } from 'express';
import { createTokenVerifier, isRole, staticKeySource } from '@platform/auth';
import {
  type Lifecycle,
  type Logger,
  type Metrics,
  type Redis,
  packageRoot,
  redisCheck,
} from '@platform/service-kit';
import { createApiApp } from '@platform/service-kit/api-app';
import {
  type Knex,
  databaseCheck,
} from '@platform/service-kit/database';
import { createAccessTokenIssuer } from './auth/access-tokens.ts';
import type { AuthServices } from './auth/auth-services.ts';
import { accountsRouter } from './accounts/accounts.routes.ts';
import { auditRouter } from './audit/audit.routes.ts';
import { authRouter } from './auth/auth.routes.ts';
import { createCallerThrottle, createLoginThrottle } from './request/caller-throttle.ts';
import type { PasswordHasher } from './passwords/password-hasher.ts';
import type { RevocationWriter } from '@platform/auth';
import { createSessionEndings } from './sessions/session-endings.ts';
import { sessionsRouter } from './sessions/sessions.routes.ts';
import { type SigningKey, type VerificationKey, distinctKeys, jwksOf } from './auth/signing-key.ts';
import type { IdentityConfig } from './config.ts';
import type { Mailer } from './notifications/mailer.ts';
import type { SmsSender } from './notifications/sms-sender.ts';
import { phoneActivationRouter } from './phone-activation/phone-activation.routes.ts';
import { createSmsLimits } from './phone-activation/sms-limits.ts';
import { passwordResetRouter } from './password-reset/password-reset.routes.ts';
import { allowedOrigins } from './request/link-allowlist.ts';
import { usersRouter } from './users/users.routes.ts';
import { loginAttemptCounter } from './auth/login-metrics.ts';
import { passwordRefusalCounter } from './passwords/password-metrics.ts';
import { secretBox } from './factor-records/secret-box.ts';
import { secondFactorCounter } from './second-factor/second-factor-metrics.ts';
import { secondFactorRouter } from './second-factor/second-factor.routes.ts';
import { isTokenEndpoint, tokenEndpointsRouter } from './token-endpoints/token-endpoints.routes.ts';

/** The contract this service is checked against. */
export const OPENAPI_PATH = join(packageRoot(import.meta.url), 'openapi.yaml');

/** Everything the identity app needs, made by the composition root (or by a test). */
export interface IdentityDeps {
  config: IdentityConfig;
  logger: Logger;
  db: Knex;
  redis: Redis;
  metrics: Metrics;
  lifecycle: Lifecycle;
  hasher: PasswordHasher;
  signingKey: SigningKey;
  /** The keys of config.JWT_PREVIOUS_PUBLIC_KEYS (`verificationKeyFromPem` of each; their kids take a hash, which is async). */
  previousKeys: readonly VerificationKey[];
  mailer: Mailer;
  sms: SmsSender;
  /** Writes the revocations and keeps Redis's copy whole (CONTRACT.md part 13); started by the composition root. */
  revocations: RevocationWriter;
}

/** Builds the identity service's Express app. It never listens: index.ts or a test does. */
export function createApp(deps: IdentityDeps): Express {
  const { config, db } = deps;
  const { revocations } = deps;
  // The signing key and the retired ones of JWT_PREVIOUS_PUBLIC_KEYS: a rotation logs nobody out.
  const verificationKeys = distinctKeys([deps.signingKey, ...deps.previousKeys]);
  const verifier = createTokenVerifier({
    keys: staticKeySource(new Map(verificationKeys.map((key) => [key.kid, key.publicKey]))),
    issuer: config.TOKEN_ISSUER,
    audience: config.JWT_AUDIENCE,
    revocations,
  });
  passwordRefusalCounter(deps.metrics, deps.hasher);
  const sessions = createSessionEndings({
    db,
    revocations,
    accessTokenTtlS: config.ACCESS_TOKEN_TTL_S,
    logger: deps.logger,
  });
  const auth: AuthServices = {
    db,
    logger: deps.logger,
    hasher: deps.hasher,
    throttle: createLoginThrottle(deps.redis, config.LOGIN_FAILURES_PER_MIN),
    accessTokens: createAccessTokenIssuer({
      key: deps.signingKey,
      issuer: config.TOKEN_ISSUER,
      audience: config.JWT_AUDIENCE,
      ttlS: config.ACCESS_TOKEN_TTL_S,
      sessionMaxLifetimeS: config.SESSION_MAX_LIFETIME_S,
    }),
    verifier,
    revocations,
    sessions,
    mailer: deps.mailer,
    maxFailedLogins: config.AUTH_MAX_FAILED_LOGINS,
    refreshTokenTtlS: config.REFRESH_TOKEN_TTL_S,
    sessionMaxLifetimeS: config.SESSION_MAX_LIFETIME_S,
    // Identity's HMAC key, here under a label of its own (the digest cannot be mistaken for a code's).
    auditKey: config.SMS_CODE_HMAC_KEY,
    countLogin: loginAttemptCounter(deps.metrics),
    secondFactorRequiredRoles: config.SECOND_FACTOR_REQUIRED_ROLES.filter(isRole),
    tokenBinding: config.TOKEN_BINDING === 'on',
  };
  const app = createApiApp({
    logger: deps.logger,
    metrics: deps.metrics,
    checks: [databaseCheck(db), redisCheck(deps.redis), deps.revocations.readiness],
    lifecycle: deps.lifecycle,
    requestDeadlineMs: config.REQUEST_DEADLINE_MS,
    apiSpec: OPENAPI_PATH,
    internalAssertionKey: config.INTERNAL_ASSERTION_KEY,
    validateResponses: config.OPENAPI_VALIDATE_RESPONSES,
    // RFC 7662 and RFC 7009 answer their errors in RFC 6749's shape (CONTRACT.md part 16).
    errors: { oauth: isTokenEndpoint },
    routers: [
      authRouter(auth, jwksOf(verificationKeys)),
      sessionsRouter(auth),
      tokenEndpointsRouter({ ...auth, issuer: config.TOKEN_ISSUER }),
      secondFactorRouter({
        ...auth,
        box: secretBox(config.SECOND_FACTOR_ENCRYPTION_KEY),
        issuerLabel: config.SECOND_FACTOR_ISSUER,
        countVerification: secondFactorCounter(deps.metrics),
      }),
      usersRouter({
        db,
        verifier,
        hasher: deps.hasher,
        sessions,
        mailer: deps.mailer,
        logger: deps.logger,
        maxFailedLogins: config.AUTH_MAX_FAILED_LOGINS,
        usernameChangesPerDay: config.USERNAME_CHANGES_PER_DAY,
      }),
      passwordResetRouter({
        db,
        verifier,
        hasher: deps.hasher,
        sessions,
        mailer: deps.mailer,
        logger: deps.logger,
        tokenTtlS: config.PASSWORD_RESET_TTL_S,
        mailsPerUserPerHour: config.PASSWORD_RESET_MAILS_PER_USER_PER_HOUR,
        tokenBinding: auth.tokenBinding,
        allowedOrigins: allowedOrigins(config.RESET_REDIRECT_ALLOWLIST),
        throttle: createCallerThrottle(deps.redis, {
          name: 'password-reset-requests',
          limit: config.PASSWORD_RESET_REQUESTS_PER_HOUR,
          windowS: 3600,
          message: 'Too many password reset requests',
          unavailableMessage: 'Password reset is temporarily unavailable',
        }),
      }),
      phoneActivationRouter({
        db,
        verifier,
        sms: deps.sms,
        limits: createSmsLimits(deps.redis, {
          cooldownS: config.SMS_REQUEST_COOLDOWN_S,
          dailyCap: config.SMS_DAILY_CAP,
          dailyCapPerAccount: config.SMS_DAILY_CAP_PER_ACCOUNT,
        }),
        codeKey: config.SMS_CODE_HMAC_KEY,
        codeTtlS: config.SMS_CODE_TTL_S,
        defaultRegion: config.PHONE_DEFAULT_REGION,
        allowedLinkOrigins: allowedOrigins(config.ACTIVATION_LINK_ALLOWLIST),
      }),
      accountsRouter({ db, verifier }),
      auditRouter({ db, verifier }),
    ],
  });
  return app;
}
