import { tokenSettingsSpec } from '@platform/auth';
import { join } from 'node:path';
import { type ConfigOf, env, httpLimitsSpec, internalAssertionSpec, packageRoot, redisConfigSpec, tracingSpec } from '@platform/service-kit';
import { DEFAULT_RATE_LIMITS_JSON, parseRateLimits } from './rate-limit/rate-limits.ts';
import { LOCAL_CLIENT_KEYS, parseClientKeys } from './signing/client-keys.ts';

// The services' OpenAPI documents beside the gateway in the repository (from src/ and from dist/ alike).
const repoRoot = join(packageRoot(import.meta.url), '..');

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Every setting of the gateway, one line each, with CONTRACT.md's names. APP_ENV picks the
 * environment: `local` runs with the defaults below; `test` and `prod` must name their client keys,
 * upstreams and Redis, and the gateway refuses to start until they do.
 */
export const gatewayConfigSpec = {
  GATEWAY_PORT: env.port('Port the gateway listens on (the only public port)', { default: 8080 }),
  GATEWAY_MANAGEMENT_PORT: env.port('Internal port serving /metrics and /health/* (never exposed publicly)', { default: 9080 }),
  HOST: env.string('Interface to bind; 0.0.0.0 in containers', { default: '127.0.0.1' }),
  LOG_LEVEL: env.oneOf(LOG_LEVELS, 'Lowest level written to the log', { default: 'info' }),
  ...redisConfigSpec('nonces, idempotency keys, token blacklist'),
  IDENTITY_URL: env.url('Base URL of the identity service upstream', ['http:', 'https:'], { localDefault: 'http://127.0.0.1:8081' }),
  RISK_URL: env.url('Base URL of the risk service upstream', ['http:', 'https:'], { localDefault: 'http://127.0.0.1:8082' }),
  IDENTITY_JWKS_URL: env.url('Where the identity service publishes its token keys', ['http:', 'https:'], {
    localDefault: 'http://127.0.0.1:8081/.well-known/jwks.json',
  }),
  JWKS_REFRESH_MS: env.integer(
    'How often the token key set of IDENTITY_JWKS_URL is re-validated in the background (a 304 while unchanged): a key identity no longer publishes stops verifying within about this long',
    { min: 100, max: 60_000 },
    { default: 2000 },
  ),
  ...tokenSettingsSpec,
  GATEWAY_CLIENT_KEYS: env.custom('JSON array of client keys { keyId, alg, secret | publicKey, notAfter? }; unused when GATEWAY_CLIENT_KEYS_FILE is set', parseClientKeys, {
    localDefault: LOCAL_CLIENT_KEYS,
    // Outside local one of the two is required: gatewayConfigProblems says so.
    default: [],
    secret: true,
  }),
  GATEWAY_CLIENT_KEYS_FILE: env.string(
    'File holding the client keys (the JSON of GATEWAY_CLIENT_KEYS), used instead of it and re-read within 5 s of a change; an invalid change keeps the last valid keys',
    { default: '' },
  ),
  GATEWAY_RATE_LIMITS: env.custom(
    'Rate limit per client key, JSON { "<keyId>" | "*": { "limit": N, "windowS": S } }: at most N signed requests per S seconds, shared by every replica through Redis',
    parseRateLimits,
    { default: parseRateLimits(DEFAULT_RATE_LIMITS_JSON) },
  ),
  SIGNATURE_MAX_SKEW_S: env.integer('Allowed distance of a signature\'s `created` from the gateway clock, seconds', { min: 1, max: 3600 }, { default: 300 }),
  IDEMPOTENCY_TTL_UNSAFE_S: env.integer('How long POST/PATCH/PUT/DELETE idempotency keys are remembered, seconds', { min: 1, max: 604_800 }, { default: 86_400 }),
  IDEMPOTENCY_TTL_SAFE_S: env.integer('How long GET/HEAD idempotency keys are remembered, seconds', { min: 1, max: 86_400 }, { default: 600 }),
  CORS_ORIGINS: env.list('Browser origins allowed to call the API', { default: [], localDefault: ['http://localhost:3000'] }),
  GATEWAY_BODY_LIMIT_BYTES: env.integer('Largest request body accepted', { min: 1024, max: 10_485_760 }, { default: 102_400 }),
  UPSTREAM_TIMEOUT_MS: env.integer('How long an upstream may take before the gateway answers 504', { min: 100, max: 120_000 }, { default: 10_000 }),
  GATEWAY_CACHE_MB: env.integer('Memory for cached station answers, MB (CONTRACT.md part 17); 0 turns the cache off', { min: 0, max: 4096 }, { default: 32 }),
  TRUSTED_PROXY_HOPS: env.integer(
    'Load balancers in front of the gateway whose X-Forwarded-For/-Proto entries are believed; 0 = the socket peer is the client',
    { min: 0, max: 5 },
    { default: 0 },
  ),
  IDENTITY_OPENAPI_PATH: env.string('The identity service\'s openapi.yaml: its operations are proxied, and it is merged into GET /openapi.json', {
    default: join(repoRoot, 'services', 'identity', 'openapi.yaml'),
  }),
  RISK_OPENAPI_PATH: env.string('The risk service\'s openapi.yaml: its operations are proxied, and it is merged into GET /openapi.json', {
    default: join(repoRoot, 'services', 'risk', 'openapi.yaml'),
  }),
  DRAIN_TIMEOUT_MS: env.integer('How long in-flight requests may finish on shutdown', { min: 0, max: 120_000 }, { default: 10_000 }),
  // The gateway's deadline is a backstop above UPSTREAM_TIMEOUT_MS, so an upstream's own 504 comes first.
  ...httpLimitsSpec({ requestDeadlineMs: 15_000 }),
  ...internalAssertionSpec,
  // Read again, before anything else loads, by src/tracing.ts: OpenTelemetry's own variables (CONTRACT.md part 12).
  ...tracingSpec,
};

export type GatewayConfig = ConfigOf<typeof gatewayConfigSpec>;

/** The rules across keys, applied after parsing (loadConfigOrExit's `refine`). */
export function gatewayConfigProblems(config: Pick<GatewayConfig, 'APP_ENV' | 'GATEWAY_CLIENT_KEYS' | 'GATEWAY_CLIENT_KEYS_FILE'>): string[] {
  if (config.GATEWAY_CLIENT_KEYS_FILE === '' && config.GATEWAY_CLIENT_KEYS.length === 0) {
    return [`GATEWAY_CLIENT_KEYS is required in APP_ENV=${config.APP_ENV} unless GATEWAY_CLIENT_KEYS_FILE names a file of client keys`];
  }
  return [];
}
