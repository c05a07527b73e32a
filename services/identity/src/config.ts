import { availableParallelism } from 'node:os';
import { type ConfigOf, databaseLimitsSpec, env, httpLimitsSpec, internalAssertionSpec, redisConfigSpec, tracingSpec } from '@platform/service-kit';
import { ROLES, isRole, tokenSettingsSpec } from '@platform/auth';
import { publicKeyPemsOf } from './auth/signing-key.ts';
import { isPhoneRegion } from './phone-activation/phone-number.ts';

/** PASSWORD_HASH_NICENESS's default: a hashing thread yields the CPU to the event loop (password-worker.ts). */
export const DEFAULT_HASHING_NICENESS = 10;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Every setting of the identity service, one line each. Names are CONTRACT.md's where it names them.
 * `localDefault` values apply only with APP_ENV=local; in `test` and `prod` those keys must be set.
 */
export const identityConfigSpec = {
  IDENTITY_PORT: env.port('Port the identity service listens on', { default: 8081 }),
  IDENTITY_METRICS_PORT: env.port('A second port serving only GET /metrics (the cluster sets 9081: Prometheus may reach it and nothing of the API); 0, the default: none, /metrics is served on IDENTITY_PORT only', { default: 0 }),
  HOST: env.string('Interface to bind; 0.0.0.0 in containers', { default: '127.0.0.1' }),
  LOG_LEVEL: env.oneOf(LOG_LEVELS, 'Lowest level written to the log', { default: 'info' }),
  IDENTITY_DATABASE_URL: env.url('Postgres URL of the identity database', ['postgres:', 'postgresql:'], {
    localDefault: 'postgres://postgres@127.0.0.1:5432/identity',
    secret: true,
  }),
  ...redisConfigSpec('token blacklist, login throttling, SMS cooldowns'),
  DRAIN_TIMEOUT_MS: env.integer('How long in-flight requests may finish on shutdown', { min: 0, max: 120_000 }, { default: 10_000 }),
  OPENAPI_VALIDATE_RESPONSES: env.boolean('Check every response against openapi.yaml (tests)', { default: false }),
  // Below the gateway's UPSTREAM_TIMEOUT_MS (10 s), so the client reads this service's 503, not a 504.
  ...httpLimitsSpec({ requestDeadlineMs: 8000 }),
  ...databaseLimitsSpec,
  ...internalAssertionSpec,
  // Read again, before anything else loads, by src/tracing.ts: OpenTelemetry's own variables (CONTRACT.md part 12).
  ...tracingSpec,

  BOOTSTRAP_ADMIN_USERNAME: env.string('ADMIN created at start when missing, never overwritten', {
    localDefault: 'admin@example.com',
  }),
  BOOTSTRAP_ADMIN_PASSWORD: env.string('Password of the bootstrap ADMIN', { localDefault: 'local-admin-password', secret: true }),
  BCRYPT_COST: env.integer('bcrypt cost factor for password hashes', { min: 4, max: 15 }, { default: 10 }),
  PASSWORD_HASH_THREADS: env.integer('Worker threads hashing passwords, so logins never stall the event loop', { min: 1, max: 64 }, {
    default: Math.max(1, Math.min(4, availableParallelism() - 1)),
  }),
  PASSWORD_HASH_NICENESS: env.integer('How much the hashing threads yield the CPU to other threads (0: not at all, 19: most)', { min: 0, max: 19 }, {
    default: DEFAULT_HASHING_NICENESS,
  }),
  AUTH_MAX_FAILED_LOGINS: env.integer('Consecutive failed logins allowed; the next blocks the user', { min: 1, max: 100 }, { default: 5 }),
  LOGIN_FAILURES_PER_MIN: env.integer('Failed logins per minute per client key and per source address', { min: 1, max: 1_000_000 }, { default: 100 }),

  JWT_PRIVATE_KEY: env.string('PEM private key (ES256 or RS256) signing access tokens; generated and kept in local', {
    localDefault: '',
    secret: true,
  }),
  JWT_PREVIOUS_PUBLIC_KEYS: env.custom(
    'PEM public keys (concatenated) of retired signing keys: their tokens still verify and they stay in the JWKS until removed (docs/deploy.md: key rotation)',
    publicKeyPemsOf,
    { default: [] },
  ),
  JWT_LOCAL_KEY_FILE: env.string('Local only: where the generated signing key is kept when JWT_PRIVATE_KEY is empty', {
    default: '.local/jwt-signing-key.pem',
  }),
  ...tokenSettingsSpec,
  ACCESS_TOKEN_TTL_S: env.integer('Access token lifetime, seconds', { min: 60, max: 86_400 }, { default: 900 }),
  REVOCATION_MIRROR_CHECK_MS: env.integer(
    'How often each identity process checks that Redis still holds the revocation mirror (re-seeds it from Postgres when not)',
    { min: 100, max: 4000 },
    { default: 1000 },
  ),
  REFRESH_TOKEN_TTL_S: env.integer('Refresh token lifetime, seconds', { min: 300, max: 31_536_000 }, { default: 2_592_000 }),
  SESSION_MAX_LIFETIME_S: env.integer('Absolute lifetime of a login session, seconds: no refresh after it, however often rotated', { min: 300, max: 315_360_000 }, {
    default: 7_776_000,
  }),

  AUDIT_RETENTION_DAYS: env.integer('Days audit events are kept; older ones are pruned hourly by every identity process', { min: 1, max: 36_500 }, {
    default: 400,
  }),

  USERNAME_CHANGES_PER_DAY: env.integer('Changes of one user\'s username by non-ADMINs per UTC day (429 beyond)', { min: 1, max: 1000 }, { default: 3 }),

  PASSWORD_RESET_TTL_S: env.integer('Password reset token lifetime, seconds', { min: 60, max: 86_400 }, { default: 1800 }),
  PASSWORD_RESET_REQUESTS_PER_HOUR: env.integer('Password reset requests per hour per client key and per source address', { min: 1, max: 100_000 }, {
    default: 20,
  }),
  PASSWORD_RESET_MAILS_PER_USER_PER_HOUR: env.integer('Password reset e-mails one user may be sent per hour, whoever asks (further requests are answered alike and send nothing)', { min: 1, max: 1000 }, {
    default: 5,
  }),
  RESET_REDIRECT_ALLOWLIST: env.list('Origins that reset e-mail links (resetPageLink) and post-reset redirects (loginPageLink) may point at', {
    default: [],
    localDefault: ['http://localhost:3000'],
  }),
  MAIL_PROVIDER: env.oneOf(['log', 'http'], 'How e-mail is sent: written to the log, or POSTed to MAIL_HTTP_URL', {
    localDefault: 'log',
  }),
  MAIL_HTTP_URL: env.url('Mail provider endpoint when MAIL_PROVIDER=http', ['http:', 'https:'], { default: '' }),
  NOTIFY_HTTP_TIMEOUT_MS: env.integer('Timeout of one call to the mail or SMS provider', { min: 100, max: 60_000 }, { default: 5000 }),
  SMS_PROVIDER: env.oneOf(['log', 'http'], 'How SMS is sent: written to the log, or POSTed to SMS_HTTP_URL', {
    localDefault: 'log',
  }),
  SMS_HTTP_URL: env.url('SMS provider endpoint when SMS_PROVIDER=http', ['http:', 'https:'], { default: '' }),
  SMS_HTTP_TOKEN: env.string('Bearer token for the SMS provider, if it wants one', { default: '', secret: true }),
  SMS_CODE_TTL_S: env.integer('Phone activation code lifetime, seconds', { min: 60, max: 3600 }, { default: 300 }),
  SMS_CODE_HMAC_KEY: env.string('Key of the HMAC under which activation codes are stored', {
    localDefault: 'local-sms-code-hmac-key',
    secret: true,
  }),
  SMS_REQUEST_COOLDOWN_S: env.integer('Seconds before an account may ask for another activation SMS', { min: 1, max: 3600 }, { default: 60 }),
  PHONE_DEFAULT_REGION: env.string('ISO 3166 region of phone numbers written without a country code', { default: 'TR' }),
  ACTIVATION_LINK_ALLOWLIST: env.list('Origins the activation page link sent by SMS may point at (phoneNumberActivationPageLink)', {
    default: [],
    localDefault: ['http://localhost:3000'],
  }),
  SMS_DAILY_CAP: env.integer('Activation SMS per phone number per day', { min: 1, max: 1000 }, { default: 10 }),
  SMS_DAILY_CAP_PER_ACCOUNT: env.integer('Activation SMS per account per UTC day, whatever the number (429 beyond)', { min: 1, max: 1000 }, { default: 5 }),
  SECOND_FACTOR_REQUIRED_ROLES: env.list('Roles whose holders must show a second factor (CONTRACT.md part 15): their aal 1 tokens open only enrolment', {
    default: ['ADMIN'],
    localDefault: [],
  }),
  SECOND_FACTOR_ENCRYPTION_KEY: env.string('Key under which TOTP secrets are encrypted at rest (AES-256-GCM); 32 characters or more', {
    localDefault: 'local-second-factor-encryption-key-0123456789',
    secret: true,
  }),
  SECOND_FACTOR_ISSUER: env.string('The issuer an authenticator app shows beside the account (the otpauth URI)', { default: 'Identity Risk Platform' }),
};

export type IdentityConfig = ConfigOf<typeof identityConfigSpec>;

/** Rules that span keys: a provider set to `http` needs its URL. */
export function identityConfigProblems(config: IdentityConfig): string[] {
  const problems: string[] = [];
  if (config.MAIL_PROVIDER === 'http' && config.MAIL_HTTP_URL === '') {
    problems.push('MAIL_HTTP_URL is required when MAIL_PROVIDER=http');
  }
  if (config.SMS_PROVIDER === 'http' && config.SMS_HTTP_URL === '') {
    problems.push('SMS_HTTP_URL is required when SMS_PROVIDER=http');
  }
  // The log providers write message texts (reset links, activation codes) to the log: fine on a laptop only.
  if (config.APP_ENV === 'prod' && config.MAIL_PROVIDER === 'log') problems.push('MAIL_PROVIDER=log is not allowed in prod');
  if (config.APP_ENV === 'prod' && config.SMS_PROVIDER === 'log') problems.push('SMS_PROVIDER=log is not allowed in prod');
  if (config.APP_ENV !== 'local' && config.JWT_PRIVATE_KEY === '') problems.push('JWT_PRIVATE_KEY is required outside local');
  for (const role of config.SECOND_FACTOR_REQUIRED_ROLES) if (!isRole(role)) problems.push(`SECOND_FACTOR_REQUIRED_ROLES names "${role}", which is not a role (${ROLES.join(', ')})`);
  if (config.SECOND_FACTOR_ENCRYPTION_KEY.length < 32) problems.push('SECOND_FACTOR_ENCRYPTION_KEY must be at least 32 characters');
  if (!isPhoneRegion(config.PHONE_DEFAULT_REGION)) problems.push(`PHONE_DEFAULT_REGION must be an ISO 3166 region code such as TR, got "${config.PHONE_DEFAULT_REGION}"`);
  return problems;
}
