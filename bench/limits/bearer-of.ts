// The server of limits F and F′: limit B's answer behind the bearer check risk makes (@platform/auth's
// verifier on identity's JWKS, revocations read in the stack's Redis for a direct call); under the
// gateway's assertion (limit F′) as risk makes it there, without the revocation read.
import { createServer } from 'node:http';
import { bearerAuth, createRevocationReader, createTokenVerifier, jwksKeySource } from '@platform/auth';
import { createLogger, createRedis, gatewayCheckedBearer, trustForwardingOnlyFromGateway } from '@platform/service-kit';
import express, { type NextFunction, type Request, type Response } from 'express';
import { AUDIENCE, type LimitOptions, STATION_JSON, answeredHealth, listen, refuse } from './common.ts';

/** Starts the limit; `assertionKey` makes it limit F′ (the assertion checked, and trusted for the revocations). */
export function listenBearerLimit(options: LimitOptions, service: string, assertionKey?: string): void {
  const logger = createLogger({ service, level: 'silent' });
  // A client made as risk makes its own (auto-pipelined), in the stack's prefix.
  const redis = createRedis({ url: options.redisUrl, keyPrefix: options.redisPrefix, logger });
  const revocations = createRevocationReader(redis, { logger });
  const verifier = createTokenVerifier({ keys: jwksKeySource({ url: options.jwksUrl, refreshIntervalMs: 5000 }), issuer: options.issuer, audience: AUDIENCE, revocations });
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/health/live', (req, res) => void answeredHealth(req, res));
  if (assertionKey !== undefined) app.use(trustForwardingOnlyFromGateway(assertionKey, logger));
  const checkedByGateway = assertionKey === undefined ? undefined : gatewayCheckedBearer(assertionKey);
  app.get('/v1/weather-stations/by/id/:stationId', bearerAuth(verifier, { checkedByGateway }), (_req, res) => {
    res.type('application/json').send(STATION_JSON);
  });
  // The refusals' statuses (401, or 503 when Redis cannot say): the bench counts every non-2xx.
  app.use((err: { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
    refuse(res, err.status ?? 500);
  });
  listen(createServer(app), options.port);
}
