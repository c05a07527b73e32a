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
import { identityConfigProblems, identityConfigSpec } from './config.ts';

// Composition root: the only module that reads process.env, connects, and listens.
const config = loadConfigOrExit(identityConfigSpec, process.env, identityConfigProblems);
const logger = createLogger({ service: 'identity', level: config.LOG_LEVEL });
const lifecycle = { draining: false };
const db = await connectDatabase({
  appEnv: config.APP_ENV,
  url: config.IDENTITY_DATABASE_URL,
  applicationName: 'identity',
  migrations,
  logger,
});
const redis = createRedis({ url: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX, logger });
const metrics = createMetrics('identity', { collectDefault: true });

await serveUntilStopped({
  service: 'identity',
  app: createApp({ config, logger, db, redis, metrics, lifecycle }),
  port: config.IDENTITY_PORT,
  host: config.HOST,
  logger,
  lifecycle,
  drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
  appEnv: config.APP_ENV,
  connections: { postgres: config.IDENTITY_DATABASE_URL, redis: config.REDIS_URL },
  closers: [
    { name: 'postgres', close: () => db.destroy() },
    { name: 'redis', close: () => closeRedis(redis) },
  ],
});
