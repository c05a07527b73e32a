// First: OpenTelemetry hooks what every later import loads (only when OTEL_EXPORTER_OTLP_ENDPOINT is set).
import './tracing.ts';
import {
  type Host,
  type OpenApiDocument,
  closeRedis,
  createLogger,
  createMetrics,
  createRedis,
  loadConfigOrExit,
  redisConnectionName,
  redisConnectionOf,
  serveUntilStopped,
  serverLimitsOf,
  stopTracing,
  waitForRedis,
  withServerSpans,
} from '@platform/service-kit';
import { createGateway } from './app.ts';
import { gatewayConfigProblems, gatewayConfigSpec } from './config.ts';
import { loadApiDocumentFor } from './docs/load-api-document.ts';
import { clientKeysFileValidGauge, clientKeysReloadCounter } from './pipeline/gateway-metrics.ts';
import { type ClientKeysFile, watchClientKeysFile } from './signing/client-keys-file.ts';

/** How long the start waits for Redis before it listens anyway (readiness says when Redis is there). */
const REDIS_WAIT_MS = 2000;

/**
 * Composition root: the only code that reads the environment, connects, and listens. Run as its own
 * process it is given this process's environment; the embedded local stack (packages/embedded) hands
 * each deployable its own environment, its Redis factory and its exit instead.
 */
export async function startGateway(host: Host = { env: process.env }): Promise<void> {
  const config = loadConfigOrExit(gatewayConfigSpec, host.env, gatewayConfigProblems);
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });

  // The API documents are the gateway's allow-list (CONTRACT.md part 8): without them it cannot tell an
  // operation from anything else, so it refuses to start rather than proxy blindly.
  let apiDocument: OpenApiDocument;
  try {
    apiDocument = await loadApiDocumentFor(config);
  } catch (err) {
    logger.fatal({ err }, 'the API documents could not be loaded (IDENTITY_OPENAPI_PATH, RISK_OPENAPI_PATH): they name the operations the gateway proxies');
    process.exit(1);
  }

  const lifecycle = { draining: false };
  // No auto-pipelining: with a frozen Redis it queues each claim behind the previous one's timeout, past
  // the 1 s in which the gateway must fail closed (CONTRACT.md part 3).
  const redis = (host.createRedis ?? createRedis)({ ...redisConnectionOf(config), connectionName: 'gateway', logger, autoPipelining: false });
  const metrics = createMetrics('gateway', { collectDefault: true });

  // CONTRACT.md part 12: keys from a file replace GATEWAY_CLIENT_KEYS and change without a restart.
  // The counter and the gauge are there without a file too (at 0 and 1), so that dashboards and alerts
  // always find them.
  const countReload = clientKeysReloadCounter(metrics);
  const setFileValid = clientKeysFileValidGauge(metrics);
  let keysFile: ClientKeysFile | undefined;
  if (config.GATEWAY_CLIENT_KEYS_FILE !== '') {
    try {
      keysFile = await watchClientKeysFile({ path: config.GATEWAY_CLIENT_KEYS_FILE, logger, onReload: countReload, onRead: setFileValid });
    } catch (err) {
      logger.fatal({ path: config.GATEWAY_CLIENT_KEYS_FILE, reason: err instanceof Error ? err.message : String(err) }, 'GATEWAY_CLIENT_KEYS_FILE holds no valid client keys');
      process.exit(1);
    }
  }

  const gateway = createGateway({ config, logger, redis, metrics, lifecycle, apiDocument, clientKeys: keysFile?.keys, clientKeyIds: keysFile?.keyIds });
  // The client keys' replay stores dated before the first request (at most a second's wait, on a new
  // environment); without Redis now, the gateway dates them once it answers.
  if (await waitForRedis(redis, REDIS_WAIT_MS)) {
    await gateway.prepare().catch((err: unknown) => logger.warn({ err }, 'could not date the client keys\' replay stores yet; they are dated once Redis answers'));
  }

  await serveUntilStopped({
    service: 'gateway',
    // The server span of each request, when tracing is on (tracing.ts); the app itself when it is off.
    app: withServerSpans(gateway.app),
    port: config.GATEWAY_PORT,
    management: { app: gateway.management, port: config.GATEWAY_MANAGEMENT_PORT },
    host: config.HOST,
    logger,
    lifecycle,
    drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
    limits: { ...serverLimitsOf(config), maxBodyBytes: config.GATEWAY_BODY_LIMIT_BYTES },
    appEnv: config.APP_ENV,
    exit: host.exit,
    connections: {
      redis: redisConnectionName(config),
      identity: config.IDENTITY_URL,
      risk: config.RISK_URL,
      jwks: config.IDENTITY_JWKS_URL,
      clientKeys:
        keysFile === undefined
          ? config.GATEWAY_CLIENT_KEYS.map((k) => `${k.keyId} (${k.alg})`).join(', ')
          : `${config.GATEWAY_CLIENT_KEYS_FILE}: ${keysFile.keyIds().join(', ')} (re-read every second)`,
      rateLimits: config.GATEWAY_RATE_LIMITS.policies.map((p) => `${p.name === 'default' ? '*' : p.name} ${p.limit}/${p.windowS}s`).join(', '),
    },
    closers: [
      { name: 'upstream connections and Redis watches', close: () => gateway.close() },
      { name: 'client keys file', close: async () => keysFile?.close() },
      { name: 'redis', close: () => closeRedis(redis) },
      // Last: the spans of the drained requests are flushed to the collector.
      { name: 'tracing', close: stopTracing },
    ],
  });
}

if (import.meta.main) await startGateway();
