// Limit F: limit B behind what a direct call to risk must do before it answers (CONTRACT.md parts 4 and
// 10): the bearer token verified as risk verifies it, @platform/auth's verifier on identity's JWKS, and its
// revocations read in the stack's Redis, one round trip; no validator, logs, metrics or headers.
// Usage: node bench/limits/bearer.ts --port <port> --redis-url <url> --redis-prefix <prefix> --jwks-url <url> --issuer <origin>
import { createServer } from 'node:http';
import { bearerAuth, createRevocationReader, createTokenVerifier, jwksKeySource } from '@platform/auth';
import { createLogger, createRedis } from '@platform/service-kit';
import express, { type NextFunction, type Request, type Response } from 'express';
import { AUDIENCE, STATION_JSON, answeredHealth, limitOptions, listen, refuse } from './common.ts';

const options = limitOptions('bearer', ['redisUrl', 'redisPrefix', 'jwksUrl', 'issuer']);
const logger = createLogger({ service: 'limit-f', level: 'silent' });
// A client made as risk makes its own (auto-pipelined), in the stack's prefix.
const redis = createRedis({ url: options.redisUrl, keyPrefix: options.redisPrefix, logger });
const revocations = createRevocationReader(redis, { logger });
const verifier = createTokenVerifier({ keys: jwksKeySource({ url: options.jwksUrl, refreshIntervalMs: 5000 }), issuer: options.issuer, audience: AUDIENCE, revocations });
const app = express();
app.disable('x-powered-by');
app.disable('etag');
app.get('/health/live', (req, res) => void answeredHealth(req, res));
app.get('/v1/weather-stations/by/id/:stationId', bearerAuth(verifier), (_req, res) => {
  res.type('application/json').send(STATION_JSON);
});
// The refusals' statuses (401, or 503 when Redis cannot say): the bench counts every non-2xx.
app.use((err: { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
  refuse(res, err.status ?? 500);
});
listen(createServer(app), options.port);
