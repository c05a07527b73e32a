import { closeRedis, createLogger, createMetrics, createRedis, loadConfigOrExit, serveUntilStopped } from '@platform/service-kit';
import { createApp } from './app.ts';
import { gatewayConfigSpec } from './config.ts';

// Composition root: the only module that reads process.env, connects, and listens.
const config = loadConfigOrExit(gatewayConfigSpec, process.env);
const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
const lifecycle = { draining: false };
const redis = createRedis({ url: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX, logger });
const metrics = createMetrics('gateway', { collectDefault: true });

await serveUntilStopped({
  service: 'gateway',
  app: createApp({ config, logger, redis, metrics, lifecycle }),
  port: config.GATEWAY_PORT,
  host: config.HOST,
  logger,
  lifecycle,
  drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
  appEnv: config.APP_ENV,
  connections: {
    redis: config.REDIS_URL,
    identity: config.IDENTITY_URL,
    risk: config.RISK_URL,
    clientKeys: config.GATEWAY_CLIENT_KEYS.map((k) => `${k.keyId} (${k.alg})`).join(', '),
  },
  closers: [{ name: 'redis', close: () => closeRedis(redis) }],
});
