// Limit F′: limit B behind what a call to risk vouched for by the gateway must do before it answers
// (CONTRACT.md part 10): the assertion checked (service-kit's trustForwardingOnlyFromGateway), the bearer
// token verified as risk verifies it under the assertion (@platform/auth's bearerAuth with checkedByGateway:
// no revocation read); no validator, logs, metrics or headers.
// Usage: node bench/limits/vouched-bearer.ts --port <port> --redis-url <url> --redis-prefix <prefix> --jwks-url <url> --issuer <origin> --assertion-key <key>
import { createServer } from 'node:http';
import { bearerAuth, createRevocationReader, createTokenVerifier, jwksKeySource } from '@platform/auth';
import { createLogger, createRedis, gatewayCheckedBearer, trustForwardingOnlyFromGateway } from '@platform/service-kit';
import express, { type NextFunction, type Request, type Response } from 'express';
import { AUDIENCE, STATION_JSON, answeredHealth, limitOptions, listen, refuse } from './common.ts';

const options = limitOptions('vouched-bearer', ['redisUrl', 'redisPrefix', 'jwksUrl', 'issuer']);
const { assertionKey } = options;
if (assertionKey === undefined) {
  process.stderr.write('usage: node bench/limits/vouched-bearer.ts --port <port> --redis-url <redis-url> --redis-prefix <redis-prefix> --jwks-url <jwks-url> --issuer <issuer> --assertion-key <assertion-key>\n');
  process.exit(2);
}
const logger = createLogger({ service: 'limit-f-vouched', level: 'silent' });
// Risk's verifier reads revocations for a direct call; under the assertion it does not (checkedByGateway).
const redis = createRedis({ url: options.redisUrl, keyPrefix: options.redisPrefix, logger });
const revocations = createRevocationReader(redis, { logger });
const verifier = createTokenVerifier({ keys: jwksKeySource({ url: options.jwksUrl, refreshIntervalMs: 5000 }), issuer: options.issuer, audience: AUDIENCE, revocations });
const app = express();
app.disable('x-powered-by');
app.disable('etag');
app.get('/health/live', (req, res) => void answeredHealth(req, res));
app.use(trustForwardingOnlyFromGateway(assertionKey, logger));
app.get('/v1/weather-stations/by/id/:stationId', bearerAuth(verifier, { checkedByGateway: gatewayCheckedBearer(assertionKey) }), (_req, res) => {
  res.type('application/json').send(STATION_JSON);
});
// The refusals' statuses (401, or 503 when Redis cannot say): the bench counts every non-2xx.
app.use((err: { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
  refuse(res, err.status ?? 500);
});
listen(createServer(app), options.port);
