import { type TestIssuer, createTestIssuer, freshEnvironment } from '@platform/auth/testing';
import { type Redis, type ServerHandle, createMetrics, listen, loadConfig, publishStationGeneration } from '@platform/service-kit';
import {
  type CapturedLogger,
  type TestDatabase,
  type TestRedis,
  captureLogger,
  createTestDatabase,
  createTestRedis,
} from '@platform/service-kit/testing';
import { migrations } from '../../migrations/index.ts';
import { seedStationData } from '../../seeds/station-data.ts';
import { type Risk, createRisk } from '../../src/app.ts';
import { type RiskConfig, riskConfigSpec } from '../../src/config.ts';
import { type StationIndexLoader, type StationIndexSource, createStationIndexLoader } from '../../src/weather-stations/station-index-loader.ts';

/** One test file's world: a seeded database, Redis, a token issuer with its JWKS server, and the running app. */
export interface RiskTestContext {
  database: TestDatabase;
  testRedis: TestRedis;
  issuer: TestIssuer;
  config: RiskConfig;
  log: CapturedLogger;
  /** The loader of the main app, polling every `pollIntervalMs`. */
  stations: StationIndexLoader;
  /** Base URL of the main app, listening on 127.0.0.1. */
  url: string;
  /** `Authorization` header value with a fresh valid token (any role). */
  auth: () => string;
  /** Builds another app on the same config (e.g. with an index not loaded yet) and serves it; closed by `close`. */
  serve: (overrides?: { stations?: StationIndexSource; redis?: Redis }) => Promise<string>;
  close: () => Promise<void>;
}

/**
 * Creates a fresh database with the production migrations and the real seed, then starts the real app
 * on port 0. Call `close()` in `after`.
 */
export async function startRiskTestContext(prefix: string, options: { pollIntervalMs?: number } = {}): Promise<RiskTestContext> {
  const database = await createTestDatabase(prefix, migrations);
  await seedStationData(database.db);
  const testRedis = await createTestRedis(prefix);
  // No identity here to keep the revocations whole: a new environment, as identity leaves it.
  await freshEnvironment(testRedis.redis);
  const issuer = createTestIssuer();
  const jwks = await issuer.serveJwks();
  const config = loadConfig(riskConfigSpec, {
    OPENAPI_VALIDATE_RESPONSES: 'true',
    IDENTITY_JWKS_URL: jwks.url,
    TOKEN_ISSUER: issuer.issuer,
    JWT_AUDIENCE: issuer.audience,
    RISK_INDEX_POLL_MS: String(options.pollIntervalMs ?? 60_000),
  });
  const log = captureLogger('risk');
  const stations = createStationIndexLoader({ db: database.db, logger: log.logger, pollIntervalMs: config.RISK_INDEX_POLL_MS, publish: (version) => publishStationGeneration(testRedis.redis, version) });
  await stations.start();
  const servers: ServerHandle[] = [];
  const risks: Risk[] = [];

  const serve = async (overrides: { stations?: StationIndexSource; redis?: Redis } = {}) => {
    const risk = createRisk({
      config,
      logger: log.logger,
      redis: overrides.redis ?? testRedis.redis,
      metrics: createMetrics('risk'),
      lifecycle: { draining: false },
      stations: overrides.stations ?? stations,
    });
    const server = await listen(risk.app, 0, '127.0.0.1');
    servers.push(server);
    risks.push(risk);
    return server.url;
  };

  const url = await serve();
  return {
    database,
    testRedis,
    issuer,
    config,
    log,
    stations,
    url,
    auth: () => `Bearer ${issuer.sign()}`,
    serve,
    close: async () => {
      await Promise.all(servers.map((s) => s.close(1000)));
      await Promise.all(risks.map((risk) => risk.close()));
      await stations.stop();
      await jwks.close();
      await testRedis.close();
      await database.drop();
    },
  };
}
