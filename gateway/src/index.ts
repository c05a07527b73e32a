import { closeRedis, createLogger, createMetrics, createRedis, loadConfigOrExit, serveUntilStopped } from '@platform/service-kit';
import { createGateway } from './app.ts';
import { gatewayConfigSpec } from './config.ts';
import { loadApiDocument } from './docs/load-api-document.ts';
import type { OpenApiDocument } from './docs/openapi-merge.ts';

// Composition root: the only module that reads process.env, connects, and listens.
const config = loadConfigOrExit(gatewayConfigSpec, process.env);
const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
const lifecycle = { draining: false };
// No auto-pipelining: with a frozen Redis it queues each claim behind the previous one's timeout, past
// the 1 s in which the gateway must fail closed (CONTRACT.md part 3).
const redis = createRedis({ url: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX, logger, autoPipelining: false });
const metrics = createMetrics('gateway', { collectDefault: true });

// The API documents are a convenience, not the gateway's job: without them it still serves the API.
let apiDocument: OpenApiDocument | undefined;
try {
  apiDocument = await loadApiDocument(
    { identityPath: config.IDENTITY_OPENAPI_PATH, riskPath: config.RISK_OPENAPI_PATH },
    {
      maxSkewS: config.SIGNATURE_MAX_SKEW_S,
      safeTtlS: config.IDEMPOTENCY_TTL_SAFE_S,
      unsafeTtlS: config.IDEMPOTENCY_TTL_UNSAFE_S,
      bodyLimitBytes: config.GATEWAY_BODY_LIMIT_BYTES,
    },
  );
} catch (err) {
  logger.warn({ err }, 'API documents not loaded: /openapi.json and /docs answer 503 (set IDENTITY_OPENAPI_PATH and RISK_OPENAPI_PATH)');
}

const gateway = createGateway({ config, logger, redis, metrics, lifecycle, apiDocument });

await serveUntilStopped({
  service: 'gateway',
  app: gateway.app,
  port: config.GATEWAY_PORT,
  host: config.HOST,
  logger,
  lifecycle,
  drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
  limits: { headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS, requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS },
  appEnv: config.APP_ENV,
  connections: {
    redis: config.REDIS_URL,
    identity: config.IDENTITY_URL,
    risk: config.RISK_URL,
    jwks: config.IDENTITY_JWKS_URL,
    clientKeys: config.GATEWAY_CLIENT_KEYS.map((k) => `${k.keyId} (${k.alg})`).join(', '),
  },
  closers: [
    { name: 'upstream connections', close: async () => gateway.close() },
    { name: 'redis', close: () => closeRedis(redis) },
  ],
});
