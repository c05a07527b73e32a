import { join } from 'node:path';
import type { Express } from 'express';
import {
  type Knex,
  type Lifecycle,
  type Logger,
  type Metrics,
  type Redis,
  createApiApp,
  databaseCheck,
  packageRoot,
  redisCheck,
} from '@platform/service-kit';
import type { RiskConfig } from './config.ts';

/** The contract this service is checked against. */
export const OPENAPI_PATH = join(packageRoot(import.meta.url), 'openapi.yaml');

/** Everything the risk app needs, made by the composition root (or by a test). */
export interface RiskDeps {
  config: RiskConfig;
  logger: Logger;
  db: Knex;
  redis: Redis;
  metrics: Metrics;
  lifecycle: Lifecycle;
}

/** Builds the risk service's Express app. It never listens: index.ts or a test does. */
export function createApp(deps: RiskDeps): Express {
  return createApiApp({
    logger: deps.logger,
    metrics: deps.metrics,
    checks: [databaseCheck(deps.db), redisCheck(deps.redis)],
    lifecycle: deps.lifecycle,
    apiSpec: OPENAPI_PATH,
    validateResponses: deps.config.OPENAPI_VALIDATE_RESPONSES,
    // The weather-stations router is added here when it lands.
    routers: [],
    // Station error bodies always carry `messages` (CONTRACT.md part 7).
    errors: { messages: 'always' },
  });
}
