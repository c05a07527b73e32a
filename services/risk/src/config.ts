import { tokenSettingsSpec } from '@platform/auth';
import { type ConfigOf, databaseLimitsSpec, env, httpLimitsSpec, internalAssertionSpec, redisConfigSpec, tracingSpec } from '@platform/service-kit';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Every setting of the risk (weather-station) service, one line each.
 * `localDefault` values apply only with APP_ENV=local; in `test` and `prod` those keys must be set.
 */
export const riskConfigSpec = {
  RISK_PORT: env.port('Port the risk service listens on', { default: 8082 }),
  RISK_METRICS_PORT: env.port('A second port serving only GET /metrics (the cluster sets 9082: Prometheus may reach it and nothing of the API); 0, the default: none, /metrics is served on RISK_PORT only', { default: 0 }),
  HOST: env.string('Interface to bind; 0.0.0.0 in containers', { default: '127.0.0.1' }),
  LOG_LEVEL: env.oneOf(LOG_LEVELS, 'Lowest level written to the log', { default: 'info' }),
  RISK_DATABASE_URL: env.url('Postgres URL of the risk database (source of truth for the station index)', ['postgres:', 'postgresql:'], {
    localDefault: 'postgres://postgres@127.0.0.1:5432/risk',
    secret: true,
  }),
  ...redisConfigSpec('access token blacklist'),
  IDENTITY_JWKS_URL: env.url('Where the identity service publishes its token keys', ['http:', 'https:'], {
    localDefault: 'http://127.0.0.1:8081/.well-known/jwks.json',
  }),
  JWKS_REFRESH_MS: env.integer(
    'How often the token key set of IDENTITY_JWKS_URL is re-validated in the background (a 304 while unchanged): a key identity no longer publishes stops verifying within about this long',
    { min: 100, max: 60_000 },
    { default: 2000 },
  ),
  ...tokenSettingsSpec,
  RISK_INDEX_POLL_MS: env.integer(
    'How often each replica asks Postgres whether the station tables changed, and if so rebuilds its in-memory index',
    { min: 50, max: 3_600_000 },
    { default: 5000 },
  ),
  DRAIN_TIMEOUT_MS: env.integer('How long in-flight requests may finish on shutdown', { min: 0, max: 120_000 }, { default: 10_000 }),
  OPENAPI_VALIDATE_RESPONSES: env.boolean('Check every response against openapi.yaml (tests)', { default: false }),
  // Below the gateway's UPSTREAM_TIMEOUT_MS (10 s), so the client reads this service's 503, not a 504.
  ...httpLimitsSpec({ requestDeadlineMs: 8000 }),
  ...databaseLimitsSpec,
  ...internalAssertionSpec,
  // Read again, before anything else loads, by src/tracing.ts: OpenTelemetry's own variables (CONTRACT.md part 12).
  ...tracingSpec,
};

export type RiskConfig = ConfigOf<typeof riskConfigSpec>;
