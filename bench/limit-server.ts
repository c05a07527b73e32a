// The limits the services are measured against, each in its own process so it never shares an event
// loop with the load generator: `node` (limit A, bare node:http) or `express` (limit B, a bare Express 5
// app), both answering one station's JSON serialised once at start, as the risk index does; `proxy`
// (limit C, a bare Express 5 app passing every request to <target> with http-proxy-middleware over
// kept-alive connections: what proxying alone costs on this stack); `contract` (limit D, the least a
// gateway can do and still keep CONTRACT.md's per-request promises: a bare Express 5 app that reads the
// body, checks the SDK's HMAC signature and Content-Digest, claims the nonce in one Redis round trip and
// forwards over kept-alive connections with node:http; no logs, metrics, rate limit, revocations or
// idempotency keys: the floor of the gateway's work on this machine, below the gateway itself); `checks`
// (limit E: limit D whose one Redis round trip is the gateway's own admission, @platform/gateway/engine: the
// rate window, the nonce, the idempotency key, the revocation check and the slot's past, after the bearer
// token verified as the gateway verifies it; with <assertion-key>, it vouches for the token to the service as
// the gateway does, so the service skips its revocation read; still one flat handler, no logs, metrics or
// headers of its own: what the gateway's checks cost without its pipeline); `bearer` (limit F: limit B behind what a direct call to
// risk must do before it answers, CONTRACT.md parts 4 and 10: the bearer token verified as risk verifies it,
// @platform/auth's verifier on identity's JWKS, and its revocations read in the stack's Redis, one round trip;
// no validator, logs, metrics or headers: the floor of risk's direct by/id on this machine).
// Usage: node bench/limit-server.ts node|express <port>, node bench/limit-server.ts proxy <port> <target>,
// node bench/limit-server.ts contract <port> <target> <redis-url> <key-secret>,
// node bench/limit-server.ts checks <port> <target> <redis-url> <key-secret> <redis-key-prefix> <jwks-url> [<assertion-key>],
// node bench/limit-server.ts bearer <port> - <redis-url> - <redis-key-prefix> <jwks-url>
import { createHash, createHmac, createSecretKey, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import { Agent, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse, createServer, request } from 'node:http';
import { bearerAuth, bearerTokenOf, createRevocationReader, createTokenVerifier, jwksKeySource } from '@platform/auth';
import { signatureBase } from '@platform/client';
import { createAdmissionStore } from '@platform/gateway/engine';
import { createLogger, createRedis } from '@platform/service-kit';
import express, { type Request } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { Redis } from 'ioredis';
import { vouchedHeaders } from './vouch.ts';

/** Station 17130 as the risk service answers it (services/risk/data/stations.csv). */
export const STATION_JSON = Buffer.from(
  JSON.stringify({ stationId: 17130, stationName: 'Keçiören', latitude: 39.9727, longitude: 32.8637, city: 'Ankara', district: 'Keçiören' }),
);

const [mode, portText, target, redisUrl, keySecret, redisPrefix, jwksUrl, assertionKey] = process.argv.slice(2);
const port = Number(portText);
const known =
  mode === 'node' ||
  mode === 'express' ||
  (mode === 'proxy' && target !== undefined) ||
  (mode === 'contract' && keySecret !== undefined) ||
  ((mode === 'checks' || mode === 'bearer') && jwksUrl !== undefined);
if (!known || !Number.isInteger(port)) {
  process.stderr.write(
    'usage: node bench/limit-server.ts node|express <port>, proxy <port> <target>, contract <port> <target> <redis-url> <key-secret>, checks <port> <target> <redis-url> <key-secret> <redis-key-prefix> <jwks-url> [<assertion-key>], or bearer <port> - <redis-url> - <redis-key-prefix> <jwks-url>\n',
  );
  process.exit(2);
}

function bareNode() {
  return createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': STATION_JSON.length });
    res.end(STATION_JSON);
  });
}

function bareExpress() {
  const app = express();
  // The same two switches the services' base app turns off, so the limit does no work they skip.
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/v1/weather-stations/by/id/:stationId', (_req, res) => {
    res.type('application/json').send(STATION_JSON);
  });
  return createServer(app);
}

/**
 * Limit F: limit B's answer after risk's own bearer check of a direct call (no gateway assertion): the token
 * verified by the same verifier risk builds (services/risk/src/app.ts: identity's JWKS, its revocation reader on a
 * client made as risk makes its own, auto-pipelined, in the stack's prefix), so every answer reads the
 * token's and its session's revocations in Redis.
 */
function bareBearer(url: string, prefix: string, jwks: string) {
  const logger = createLogger({ service: 'limit-f', level: 'silent' });
  const redis = createRedis({ url, keyPrefix: prefix, logger });
  const revocations = createRevocationReader(redis, { logger });
  const verifier = createTokenVerifier({ keys: jwksKeySource({ url: jwks, refreshIntervalMs: 5000 }), issuer: ISSUER, audience: AUDIENCE, revocations });
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/health/live', (_req, res) => {
    res.json({ status: 'UP' });
  });
  app.get('/v1/weather-stations/by/id/:stationId', bearerAuth(verifier), (_req, res) => {
    res.type('application/json').send(STATION_JSON);
  });
  // The refusals' statuses (401, or 503 when Redis cannot say): the bench counts every non-2xx.
  app.use((err: { status?: number }, _req: Request, res: express.Response, _next: express.NextFunction) => {
    refuse(res, err.status ?? 500);
  });
  return createServer(app);
}

function bareProxy(upstream: string) {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  // Idle pooled sockets dropped before the upstream's keep-alive timeout (5 s), as the gateway drops its own:
  // at a light fixed rate a socket reused as risk closes it is reset. And a failed upstream request answers
  // 502 (counted as a failure) instead of throwing: with the plugins ejected, http-proxy throws what it is
  // not given a listener for, which stopped this process in a latency run.
  const agent = new Agent({ keepAlive: true, timeout: 4000, scheduling: 'lifo' });
  const failed = (_err: Error, _req: IncomingMessage, res: ServerResponse | Socket) => {
    if ('headersSent' in res && !res.headersSent) refuse(res, 502);
    else res.destroy();
  };
  app.use(createProxyMiddleware({ target: upstream, agent, changeOrigin: true, ejectPlugins: true, on: { error: failed } }));
  return createServer(app);
}

/** The SDK's Signature-Input (sig1 only, its parameters in its order); anything else is refused. */
const PARAMS = /^sig1=(\([^)]*\);created=(\d+);nonce="([^"]+)";keyid="([^"]+)";alg="hmac-sha256")$/;

function refuse(res: ServerResponse, status: number): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(`{"status":${status}}`);
}

/** Reads the whole body (the digest needs it before anything is forwarded). */
function bodyOf(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** What a request signed as the SDK signs says: its key id, nonce and `created`. */
interface Signed {
  keyId: string;
  nonce: string;
  created: number;
}

/** Limit D's signature check: the SDK's canonical headers, the digest of the body, the HMAC in constant time; the status of the refusal when it fails. */
function checkSignature(req: Request, body: Buffer, key: ReturnType<typeof createSecretKey>): Signed | 400 | 401 {
  const matched = PARAMS.exec(String(req.headers['signature-input']));
  const signature = /^sig1=:([A-Za-z0-9+/=]+):$/.exec(String(req.headers.signature));
  if (matched === null || signature === null) return 401;
  const [, params, created, nonce, keyId] = matched as unknown as [string, string, string, string, string];
  const digest = req.headers['content-digest'];
  if (body.length > 0 && digest !== `sha-256=:${createHash('sha256').update(body).digest('base64')}:`) return 400;
  const query = req.url.indexOf('?');
  let built: ReturnType<typeof signatureBase>;
  try {
    built = signatureBase({
      method: req.method as 'GET' | 'POST',
      path: query === -1 ? req.url : req.url.slice(0, query),
      query: query === -1 ? '' : req.url.slice(query),
      idempotencyKey: String(req.headers['x-idempotency-key']),
      contentDigest: typeof digest === 'string' ? digest : undefined,
      authorization: req.headers.authorization,
      created: Number(created),
      nonce,
      keyId,
      alg: 'hmac-sha256',
    });
  } catch {
    return 401;
  }
  const expected = createHmac('sha256', key).update(built.base).digest();
  const sent = Buffer.from(String(signature[1]), 'base64');
  if (built.params !== params || sent.length !== expected.length || !timingSafeEqual(sent, expected)) return 401;
  return { keyId, nonce, created: Number(created) };
}

/**
 * What a request forwarded by limit E tells the service, as the gateway tells it (CONTRACT.md part 10): the
 * client key, the client's address, a request id and a `v3` assertion vouching for the bearer token that
 * its admission found unrevoked, so the service skips its own revocation read as it does behind the gateway.
 */
interface Vouch {
  assertionKey: string;
  keyId: string;
  requestId: string;
}

/** Sends the checked request on over kept-alive connections and relays the answer. */
function forwarder(upstream: string): (req: Request, res: ServerResponse, body: Buffer, vouch?: Vouch) => void {
  const agent = new Agent({ keepAlive: true });
  const origin = new URL(upstream);
  return (req, res, body, vouch) => {
    const headers: OutgoingHttpHeaders = { host: origin.host, authorization: req.headers.authorization, 'x-idempotency-key': req.headers['x-idempotency-key'] };
    if (body.length > 0) Object.assign(headers, { 'content-type': req.headers['content-type'], 'content-length': body.length });
    if (vouch !== undefined) {
      Object.assign(
        headers,
        vouchedHeaders(vouch.assertionKey, {
          method: req.method,
          target: req.url,
          forwardedFor: req.socket.remoteAddress ?? '',
          forwardedProto: 'http',
          clientKeyId: vouch.keyId,
          requestId: vouch.requestId,
          checkedAuthorization: req.headers.authorization,
        }),
      );
    }
    const out = request({ host: origin.hostname, port: origin.port, method: req.method, path: req.url, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'], 'content-length': answer.headers['content-length'] });
      answer.pipe(res);
    });
    out.on('error', () => {
      if (!res.headersSent) refuse(res, 502);
    });
    out.end(body);
  };
}

/** An Express app answering `/health/live`, every other request through `handle`. */
function floorApp(handle: (req: Request, res: ServerResponse, body: Buffer) => Promise<void>) {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/health/live', (_req, res) => {
    res.json({ status: 'UP' });
  });
  app.use(async (req, res) => {
    await handle(req, res, await bodyOf(req));
  });
  return createServer(app);
}

function contractFloor(upstream: string, redis: Redis, secret: string) {
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  const forward = forwarder(upstream);
  return floorApp(async (req, res, body) => {
    const signed = checkSignature(req, body, key);
    if (typeof signed === 'number') return refuse(res, signed);
    if ((await redis.set(`limit-d:nonce:${signed.keyId}:${signed.nonce}`, '1', 'PX', 300_000, 'NX')) === null) return refuse(res, 409);
    forward(req, res, body);
  });
}

/** The gateway's defaults (gateway/src/config.ts): the token's issuer and audience, the rate limit of `*`. */
const ISSUER = 'urn:identity-risk-platform:identity';
const AUDIENCE = 'urn:identity-risk-platform:api';
const RATE = { limit: 10_000, windowS: 1 };

function checksFloor(upstream: string, url: string, secret: string, prefix: string, jwks: string, assertionKey: string | undefined) {
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  const forward = forwarder(upstream);
  // The stack's prefix: its revocation mirror (identity's) and the client key's slot, as the gateway sees them.
  const logger = createLogger({ service: 'limit-e', level: 'silent' });
  const redis = createRedis({ url, keyPrefix: prefix, logger, autoPipelining: false });
  const store = createAdmissionStore(redis, { nonceTtlS: 600, safeTtlS: 86_400, unsafeTtlS: 86_400, revocations: createRevocationReader(redis, { logger }) });
  const tokens = createTokenVerifier({ keys: jwksKeySource({ url: jwks, refreshIntervalMs: 5000 }), issuer: ISSUER, audience: AUDIENCE });
  return floorApp(async (req, res, body) => {
    const signed = checkSignature(req, body, key);
    if (typeof signed === 'number') return refuse(res, signed);
    const principal = await tokens.verify(bearerTokenOf(req.headers.authorization) ?? '').catch(() => undefined);
    if (principal === undefined) return refuse(res, 401);
    const owner = randomUUID();
    const admission = await store.admit({
      keyId: signed.keyId,
      nonce: signed.nonce,
      idempotencyKey: String(req.headers['x-idempotency-key']),
      method: req.method,
      token: principal,
      bearing: true,
      created: signed.created,
      owner,
      rate: RATE,
    });
    if (admission.outcome !== 'claimed') return refuse(res, admission.outcome === 'rate-limited' ? 429 : admission.outcome === 'token-revoked' ? 401 : 409);
    forward(req, res, body, assertionKey === undefined ? undefined : { assertionKey, keyId: signed.keyId, requestId: owner });
  });
}

const server =
  mode === 'node'
    ? bareNode()
    : mode === 'express'
      ? bareExpress()
      : mode === 'proxy'
        ? bareProxy(String(target))
        : mode === 'contract'
          ? contractFloor(String(target), new Redis(String(redisUrl), { enableAutoPipelining: false, maxRetriesPerRequest: 1 }), String(keySecret))
          : mode === 'bearer'
            ? bareBearer(String(redisUrl), String(redisPrefix), String(jwksUrl))
            : checksFloor(String(target), String(redisUrl), String(keySecret), String(redisPrefix), String(jwksUrl), assertionKey);
server.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
