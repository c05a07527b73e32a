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
import type { IdentityConfig } from './config.ts';

/** The contract this service is checked against. */
export const OPENAPI_PATH = join(packageRoot(import.meta.url), 'openapi.yaml');

/** Everything the identity app needs, made by the composition root (or by a test). */
export interface IdentityDeps {
  config: IdentityConfig;
  logger: Logger;
  db: Knex;
  redis: Redis;
  metrics: Metrics;
  lifecycle: Lifecycle;
}

/** Builds the identity service's Express app. It never listens: index.ts or a test does. */
export function createApp(deps: IdentityDeps): Express {
  return createApiApp({
    logger: deps.logger,
    metrics: deps.metrics,
    checks: [databaseCheck(deps.db), redisCheck(deps.redis)],
    lifecycle: deps.lifecycle,
    apiSpec: OPENAPI_PATH,
    validateResponses: deps.config.OPENAPI_VALIDATE_RESPONSES,
    // Component routers (auth, users, accounts, phone activation) are added here as they land.
    routers: [],
  });
}
