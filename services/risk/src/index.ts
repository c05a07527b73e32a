import {
  closeRedis,
  connectDatabase,
  createLogger,
  createMetrics,
  createRedis,
  loadConfigOrExit,
  serveUntilStopped,
} from '@platform/service-kit';
import { migrations } from '../migrations/index.ts';
import { createApp } from './app.ts';
import { riskConfigSpec } from './config.ts';

// Composition root: the only module that reads process.env, connects, and listens.
const config = loadConfigOrExit(riskConfigSpec, process.env);
const logger = createLogger({ service: 'risk', level: config.LOG_LEVEL });
const lifecycle = { draining: false };
const db = await connectDatabase({
  appEnv: config.APP_ENV,
  url: config.RISK_DATABASE_URL,
  applicationName: 'risk',
  migrations,
  logger,
});
const redis = createRedis({ url: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX, logger });
const metrics = createMetrics('risk', { collectDefault: true });

await serveUntilStopped({
  service: 'risk',
  app: createApp({ config, logger, db, redis, metrics, lifecycle }),
  port: config.RISK_PORT,
  host: config.HOST,
  logger,
  lifecycle,
  drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
  appEnv: config.APP_ENV,
  connections: { postgres: config.RISK_DATABASE_URL, redis: config.REDIS_URL },
  closers: [
    { name: 'postgres', close: () => db.destroy() },
    { name: 'redis', close: () => closeRedis(redis) },
  ],
});
