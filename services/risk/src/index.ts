// First: OpenTelemetry hooks what every later import loads (only when OTEL_EXPORTER_OTLP_ENDPOINT is set).
import './tracing.ts';
import {
  type Host,
  closeRedis,
  lowerStationGeneration,
  newestStationGeneration,
  publishStationGeneration,
  storedStationGeneration,
  waitForRedis,
  createLogger,
  createMetrics,
  createMetricsApp,
  createRedis,
  redisConnectionName,
  redisConnectionOf,
  loadConfigOrExit,
  stopTracing,
  serveUntilStopped,
  serverLimitsOf,
  withServerSpans,
} from '@platform/service-kit';
import {
  connectDatabase,
  databaseCheck,
} from '@platform/service-kit/database';
import { migrations } from '../migrations/index.ts';
import { seedStationData } from '../seeds/station-data.ts';
import { createRisk } from './app.ts';
import { riskConfigSpec } from './config.ts';
import { createStationIndexLoader } from './weather-stations/station-index-loader.ts';

/** How long a generation's write waits for the Redis connection before the load is tried again at the next poll. */
const REDIS_WAIT_MS = 5000;

/**
 * Composition root: the only code that reads the environment, connects, and listens. Run as its own
 * process it is given this process's environment; the embedded local stack (packages/embedded) hands
 * each deployable its own environment, its Redis factory and its exit instead.
 */
export async function startRisk(host: Host = { env: process.env }): Promise<void> {
  const config = loadConfigOrExit(riskConfigSpec, host.env);
  const logger = createLogger({ service: 'risk', level: config.LOG_LEVEL });
  const lifecycle = { draining: false };
  const db = await connectDatabase({
    appEnv: config.APP_ENV,
    url: config.RISK_DATABASE_URL,
    applicationName: 'risk',
    migrations,
    logger,
    connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
  });
  // CONTRACT.md part 9: `local` starts with the station data loaded; elsewhere a seed Job does it.
  if (config.APP_ENV === 'local') logger.info(await seedStationData(db), 'station data seeded');
  const redis = (host.createRedis ?? createRedis)({ ...redisConnectionOf(config), connectionName: 'risk', logger });
  const metrics = createMetrics('risk', { collectDefault: true });
  // Not a readiness check (requests are answered from the index while Postgres is away), but its health.
  metrics.watchDependencies([databaseCheck(db)]);
  // The first load is awaited but may fail (Postgres down): the process then serves 503 and reports not
  // ready until a later poll succeeds.
  // Each generation is written to Redis before it is served: the gateways' caches drop the older one's answers.
  // The client queues nothing while it connects (enableOfflineQueue off), so the first write waits for it.
  const publish = async (version: number) => {
    await waitForRedis(redis, REDIS_WAIT_MS);
    await publishStationGeneration(redis, version);
  };
  // And a replica follows the newest generation another one serves within FOLLOW_MS, not at its next poll.
  // A stored generation above the database's for a poll interval (a restored database) is set back to it.
  const stations = createStationIndexLoader({
    db,
    logger,
    pollIntervalMs: config.RISK_INDEX_POLL_MS,
    publish,
    newest: () => newestStationGeneration(redis),
    stored: () => storedStationGeneration(redis),
    lower: (from, to) => lowerStationGeneration(redis, from, to),
  });
  await stations.start();

  const risk = createRisk({ config, logger, redis, metrics, lifecycle, stations });

  await serveUntilStopped({
    service: 'risk',
    app: withServerSpans(risk.app),
    port: config.RISK_PORT,
    // Only /metrics, for the NetworkPolicy that lets Prometheus in (docs/deploy.md); none by default.
    management: config.RISK_METRICS_PORT === 0 ? undefined : { app: createMetricsApp({ logger, metrics }), port: config.RISK_METRICS_PORT },
    host: config.HOST,
    logger,
    lifecycle,
    drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
    limits: serverLimitsOf(config),
    appEnv: config.APP_ENV,
    exit: host.exit,
    connections: { postgres: config.RISK_DATABASE_URL, redis: redisConnectionName(config) },
    closers: [
      { name: 'token keys and revocations', close: () => risk.close() },
      { name: 'station index', close: () => stations.stop() },
      { name: 'postgres', close: () => db.destroy() },
      { name: 'redis', close: () => closeRedis(redis) },
      // Last: the spans of the drained requests are flushed to the collector.
      { name: 'tracing', close: stopTracing },
    ],
  });
}

if (import.meta.main) await startRisk();
