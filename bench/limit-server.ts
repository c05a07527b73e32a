// The limits the services are measured against, each in its own process so it never shares an event
// loop with the load generator: `node` (limit A, bare node:http) or `express` (limit B, a bare Express 5
// app), both answering one station's JSON serialised once at start, as the risk index does; `proxy`
// (limit C, a bare Express 5 app passing every request to <target> with http-proxy-middleware over
// kept-alive connections: what proxying alone costs on this stack); `contract` (limit D, the least a
// gateway can do and still keep CONTRACT.md's per-request promises: a bare Express 5 app that reads the
// body, checks the SDK's HMAC signature and Content-Digest, claims the nonce in one Redis round trip and
// forwards over kept-alive connections with node:http; no logs, metrics, rate limit, revocations or
// idempotency keys: the floor of the gateway's work on this machine, below the gateway itself).
// Usage: node bench/limit-server.ts node|express <port>, node bench/limit-server.ts proxy <port> <target>,
// node bench/limit-server.ts contract <port> <target> <redis-url> <key-secret>
import { createHash, createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { Agent, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse, createServer, request } from 'node:http';
import { signatureBase } from '@platform/client';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { Redis } from 'ioredis';

/** Station 17130 as the risk service answers it (services/risk/data/stations.csv). */
export const STATION_JSON = Buffer.from(
  JSON.stringify({ stationId: 17130, stationName: 'Keçiören', latitude: 39.9727, longitude: 32.8637, city: 'Ankara', district: 'Keçiören' }),
);

const [mode, portText, target, redisUrl, keySecret] = process.argv.slice(2);
const port = Number(portText);
const known = mode === 'node' || mode === 'express' || (mode === 'proxy' && target !== undefined) || (mode === 'contract' && keySecret !== undefined);
if (!known || !Number.isInteger(port)) {
  process.stderr.write('usage: node bench/limit-server.ts node|express <port>, proxy <port> <target>, or contract <port> <target> <redis-url> <key-secret>\n');
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

function bareProxy(upstream: string) {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(createProxyMiddleware({ target: upstream, agent: new Agent({ keepAlive: true }), changeOrigin: true, ejectPlugins: true }));
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

function contractFloor(upstream: string, redis: Redis, secret: string) {
  const key = createSecretKey(Buffer.from(secret, 'utf8'));
  const agent = new Agent({ keepAlive: true });
  const origin = new URL(upstream);
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/health/live', (_req, res) => {
    res.json({ status: 'UP' });
  });
  app.use(async (req, res) => {
    const body = await bodyOf(req);
    const matched = PARAMS.exec(String(req.headers['signature-input']));
    const signature = /^sig1=:([A-Za-z0-9+/=]+):$/.exec(String(req.headers.signature));
    if (matched === null || signature === null) return refuse(res, 401);
    const [, params, created, nonce, keyId] = matched as unknown as [string, string, string, string, string];
    const digest = req.headers['content-digest'];
    const authorization = req.headers.authorization;
    if (body.length > 0 && digest !== `sha-256=:${createHash('sha256').update(body).digest('base64')}:`) return refuse(res, 400);
    const query = req.url.indexOf('?');
    let built: ReturnType<typeof signatureBase>;
    try {
      built = signatureBase({
        method: req.method as 'GET' | 'POST',
        path: query === -1 ? req.url : req.url.slice(0, query),
        query: query === -1 ? '' : req.url.slice(query),
        idempotencyKey: String(req.headers['x-idempotency-key']),
        contentDigest: typeof digest === 'string' ? digest : undefined,
        authorization,
        created: Number(created),
        nonce,
        keyId,
        alg: 'hmac-sha256',
      });
    } catch {
      return refuse(res, 401);
    }
    const expected = createHmac('sha256', key).update(built.base).digest();
    const sent = Buffer.from(String(signature[1]), 'base64');
    if (built.params !== params || sent.length !== expected.length || !timingSafeEqual(sent, expected)) return refuse(res, 401);
    if ((await redis.set(`limit-d:nonce:${keyId}:${nonce}`, '1', 'PX', 300_000, 'NX')) === null) return refuse(res, 409);
    const headers: OutgoingHttpHeaders = { host: origin.host, authorization, 'x-idempotency-key': req.headers['x-idempotency-key'] };
    if (body.length > 0) Object.assign(headers, { 'content-type': req.headers['content-type'], 'content-length': body.length });
    const out = request({ host: origin.hostname, port: origin.port, method: req.method, path: req.url, headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'], 'content-length': answer.headers['content-length'] });
      answer.pipe(res);
    });
    out.on('error', () => {
      if (!res.headersSent) refuse(res, 502);
    });
    out.end(body);
  });
  return createServer(app);
}

const server =
  mode === 'node'
    ? bareNode()
    : mode === 'express'
      ? bareExpress()
      : mode === 'proxy'
        ? bareProxy(String(target))
        : contractFloor(String(target), new Redis(String(redisUrl), { enableAutoPipelining: false, maxRetriesPerRequest: 1 }), String(keySecret));
server.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
