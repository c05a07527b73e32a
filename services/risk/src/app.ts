import { join } from 'node:path';
import type { Express } from 'express';
import { createRevocationReader, createTokenVerifier, jwksKeySource } from '@platform/auth';
import {
  gatewayCheckedBearer,
  type Lifecycle,
  type Logger,
  type Metrics,
  type Redis,
  packageRoot,
  redisCheck,
} from '@platform/service-kit';
import { createApiApp } from '@platform/service-kit/api-app';
import type { RiskConfig } from './config.ts';
import { type StationIndexSource, stationIndexCheck } from './weather-stations/station-index-loader.ts';
import { weatherStationsRouter } from './weather-stations/weather-stations.routes.ts';

/** The contract this service is checked against. */
export const OPENAPI_PATH = join(packageRoot(import.meta.url), 'openapi.yaml');

/** Everything the risk app needs, made by the composition root (or by a test). */
export interface RiskDeps {
  config: RiskConfig;
  logger: Logger;
  redis: Redis;
  metrics: Metrics;
  lifecycle: Lifecycle;
  /** The in-memory station index; requests never touch Postgres. */
  stations: StationIndexSource;
}

/** The risk app and what must be closed with it. */
export interface Risk {
  app: Express;
  /** Stops re-validating the token keys and watching Redis's servers (after the server drained). */
  close: () => Promise<void>;
}

/** Builds the risk service's Express app. It never listens: index.ts or a test does. */
export function createRisk(deps: RiskDeps): Risk {
  const { config, logger } = deps;
  // Re-validated every JWKS_REFRESH_MS from the first bearer request on: a key identity withdrew (a leaked
  // one) stops verifying here within seconds, not when the cached set ages out.
  const tokenKeys = jwksKeySource({
    url: config.IDENTITY_JWKS_URL,
    refreshIntervalMs: config.JWKS_REFRESH_MS,
    onError: (err) => logger.warn({ err, url: config.IDENTITY_JWKS_URL }, 'could not fetch the token keys'),
  });
  // Its own reader, watching Redis's servers: a token of a bucket whose server was replaced (perhaps by a
  // replica that lagged) waits for identity's re-seed (CONTRACT.md parts 13 and 14).
  const revocations = createRevocationReader(deps.redis, { logger });
  const verifier = createTokenVerifier({
    keys: tokenKeys,
    issuer: config.TOKEN_ISSUER,
    audience: config.JWT_AUDIENCE,
    revocations,
  });
  const app = createApiApp({
    logger,
    metrics: deps.metrics,
    // Ready = the index is loaded and Redis answers. Postgres is left out on purpose: the index serves
    // every request, so an outage only delays the next reload. Redis is in: without the blacklist no
    // token can be checked, so no station request could succeed.
    checks: [stationIndexCheck(deps.stations), redisCheck(deps.redis)],
    lifecycle: deps.lifecycle,
    requestDeadlineMs: config.REQUEST_DEADLINE_MS,
    apiSpec: OPENAPI_PATH,
    internalAssertionKey: config.INTERNAL_ASSERTION_KEY,
    validateResponses: config.OPENAPI_VALIDATE_RESPONSES,
    routers: [weatherStationsRouter({ stations: deps.stations, verifier, checkedByGateway: gatewayCheckedBearer(config.INTERNAL_ASSERTION_KEY) })],
    // Station error bodies always carry `messages` (CONTRACT.md part 7).
    errors: { messages: 'always' },
  });
  return {
    app,
    close: async () => {
      tokenKeys.close();
      await revocations.stop();
    },
  };
}
