import { join } from 'node:path';
import express, { type Express } from 'express';
import {
  type Knex,
  type Lifecycle,
  type Logger,
  type Metrics,
  type Redis,
  createBaseApp,
  databaseCheck,
  finishApp,
  openApiValidator,
  operationNotBuilt,
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
  const app = createBaseApp({
    logger: deps.logger,
    metrics: deps.metrics,
    checks: [databaseCheck(deps.db), redisCheck(deps.redis)],
    lifecycle: deps.lifecycle,
  });
  app.use(express.json({ limit: '100kb' }));
  app.use(openApiValidator({ apiSpec: OPENAPI_PATH, validateResponses: deps.config.OPENAPI_VALIDATE_RESPONSES }));
  // The weather-stations router mounts here when it lands.
  app.use(operationNotBuilt);
  // Station error bodies always carry `messages` (CONTRACT.md part 7).
  return finishApp(app, { messages: 'always' });
}
