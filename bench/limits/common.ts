// What the limit servers share (bench/limits/<name>.ts, one server each, bench/README.md says which is
// which): their named options, the answer they serve, the SDK's signature check and the two forwarders.
// A limit loads nothing of the harness, so its CPU per answer is its own work alone.
import { createHash, createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { Agent, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse, createServer, request } from 'node:http';
import { parseArgs } from 'node:util';
import { signatureBase } from '@platform/client';
import type { ClientSpan } from '@platform/service-kit';
import express from 'express';
import { Pool } from 'undici';
import { vouchedHeaders } from '../harness/vouch.ts';

/** Station 17130 as the risk service answers it (services/risk/data/stations.csv). */
export const STATION_JSON = Buffer.from(
  JSON.stringify({ stationId: 17130, stationName: 'Keçiören', latitude: 39.9727, longitude: 32.8637, city: 'Ankara', district: 'Keçiören' }),
);

/** The options a limit may be given; each limit names the ones it needs. */
export interface LimitOptions {
  port: number;
  /** The upstream origin a forwarding limit sends to. */
  target: string;
  redisUrl: string;
  keySecret: string;
  /** The stack's Redis key prefix (its revocations and the client key's slot). */
  redisPrefix: string;
  jwksUrl: string;
  /** `iss` the tokens must name (the stack's TOKEN_ISSUER: its gateway's origin). */
  issuer: string;
  /** When given, requests are vouched for to the service as the gateway vouches (CONTRACT.md part 10). */
  assertionKey: string | undefined;
}

type Name = Exclude<keyof LimitOptions, 'port' | 'assertionKey'>;
const FLAGS: Record<Name, string> = { target: 'target', redisUrl: 'redis-url', keySecret: 'key-secret', redisPrefix: 'redis-prefix', jwksUrl: 'jwks-url', issuer: 'issuer' };

/**
 * Parses `--port N` and the `--name value` options `needs` lists (all required), plus an optional
 * `--assertion-key`; exits with a usage line naming what is missing.
 */
export function limitOptions(script: string, needs: readonly Name[]): LimitOptions {
  const options = Object.fromEntries([['port', { type: 'string' }], ['assertion-key', { type: 'string' }], ...Object.values(FLAGS).map((flag) => [flag, { type: 'string' }])]) as Record<string, { type: 'string' }>;
  const { values } = parseArgs({ options, strict: true });
  const port = Number(values.port);
  const missing = needs.filter((name) => values[FLAGS[name]] === undefined);
  if (!Number.isInteger(port) || port <= 0 || missing.length > 0) {
    process.stderr.write(`usage: node bench/limits/${script}.ts --port <port>${needs.map((name) => ` --${FLAGS[name]} <${FLAGS[name]}>`).join('')}\n`);
    process.exit(2);
  }
  const text = (name: Name) => String(values[FLAGS[name]] ?? '');
  const assertionKey = values['assertion-key'];
  return {
    port,
    target: text('target'),
    redisUrl: text('redisUrl'),
    keySecret: text('keySecret'),
    redisPrefix: text('redisPrefix'),
    jwksUrl: text('jwksUrl'),
    issuer: text('issuer'),
    assertionKey: typeof assertionKey === 'string' ? assertionKey : undefined,
  };
}

/**
 * Listens on 127.0.0.1 and says so on stdout (the harness waits for the limit's health path instead). The
 * harness stops a limit with SIGTERM: it exits at once but normally, so that `--cpu-prof` writes its profile
 * (BENCH_CPU_PROF), which a death by the signal never does.
 */
export function listen(server: Server, port: number): void {
  process.once('SIGTERM', () => process.exit(0));
  server.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${port}\n`));
}

/** The gateway's default audience (packages/auth/src/token-settings.ts). */
export const AUDIENCE = 'urn:identity-risk-platform:api';
/**
 * The rate limit of `*` on every gateway and checking limit of a run (the stack's GATEWAY_RATE_LIMITS):
 * counted as under the default, but far above what a core answers (cached hits passed the default's
 * 10 000 per second and were refused 429).
 */
export const RATE = { limit: 1_000_000, windowS: 1 };

/** A refusal: the bench counts every non-2xx, so its body says no more than its status. */
export function refuse(res: ServerResponse, status: number): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(`{"status":${status}}`);
}

const HEALTH = Buffer.from('{"status":"UP"}');

/** `/health/live`, which the harness polls before it measures: true when answered. */
export function answeredHealth(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.url !== '/health/live') return false;
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': HEALTH.length }).end(HEALTH);
  return true;
}

const EMPTY = Buffer.alloc(0);

/** Reads the whole body (the digest needs it before anything is forwarded); a GET or HEAD has none to wait for. */
export function bodyOf(req: IncomingMessage): Promise<Buffer> {
  if ((req.method === 'GET' || req.method === 'HEAD') && req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
    req.resume();
    return Promise.resolve(EMPTY);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The SDK's Signature-Input (sig1 only, its parameters in its order); anything else is refused. */
const PARAMS = /^sig1=(\([^)]*\);created=(\d+);nonce="([^"]+)";keyid="([^"]+)";alg="hmac-sha256")$/;
const SIGNATURE = /^sig1=:([A-Za-z0-9+/=]+):$/;

/** What a request signed as the SDK signs says: its key id, nonce and `created`. */
export interface Signed {
  keyId: string;
  nonce: string;
  created: number;
}

/** The SDK's canonical headers, the digest of the body, the HMAC in constant time; the status of the refusal when it fails. */
export function checkSignature(req: IncomingMessage, body: Buffer, key: KeyObject): Signed | 400 | 401 {
  const matched = PARAMS.exec(String(req.headers['signature-input']));
  const signature = SIGNATURE.exec(String(req.headers.signature));
  if (matched === null || signature === null) return 401;
  const [, params, created, nonce, keyId] = matched as unknown as [string, string, string, string, string];
  const digest = req.headers['content-digest'];
  if (body.length > 0 && digest !== `sha-256=:${createHash('sha256').update(body).digest('base64')}:`) return 400;
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  let built: ReturnType<typeof signatureBase>;
  try {
    built = signatureBase({
      method: req.method as 'GET' | 'POST',
      path: query === -1 ? url : url.slice(0, query),
      query: query === -1 ? '' : url.slice(query),
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
 * What a checked request tells the service, as the gateway tells it (CONTRACT.md part 10): the client key,
 * a request id and a `v3` assertion vouching for the bearer token, so the service skips its revocation read.
 */
export interface Vouch {
  assertionKey: string;
  keyId: string;
  requestId: string;
  /** What the admission left of the key's quota (its RateLimit headers, limit E′ enveloped). */
  quota?: { remaining: number; resetMs: number };
}

/** The headers a checking limit sends upstream: the ones the service reads, and the vouch when given. */
function checkedHeaders(req: IncomingMessage, body: Buffer, vouch: Vouch | undefined): Record<string, string> {
  const headers: Record<string, string> = { 'x-idempotency-key': String(req.headers['x-idempotency-key']) };
  if (req.headers.authorization !== undefined) headers.authorization = req.headers.authorization;
  if (body.length > 0) Object.assign(headers, { 'content-type': String(req.headers['content-type']), 'content-length': String(body.length) });
  if (vouch === undefined) return headers;
  return Object.assign(
    headers,
    vouchedHeaders(vouch.assertionKey, {
      method: req.method ?? 'GET',
      target: req.url ?? '/',
      forwardedFor: req.socket.remoteAddress ?? '',
      forwardedProto: 'http',
      clientKeyId: vouch.keyId,
      requestId: vouch.requestId,
      checkedAuthorization: req.headers.authorization,
      // As the gateway says it, with its default UPSTREAM_TIMEOUT_MS (10 s, less its margin).
      deadlineAtMs: Date.now() + 9000,
    }),
  );
}

/** Sends a checked request on and relays the answer. */
export type Forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, vouch?: Vouch) => void;

/** Limit D's and E's forwarding: node:http on a kept-alive Agent, the answer piped. */
export function nodeForwarder(upstream: string): Forward {
  const agent = new Agent({ keepAlive: true });
  const origin = new URL(upstream);
  return (req, res, body, vouch) => {
    const headers: OutgoingHttpHeaders = { host: origin.host, ...checkedHeaders(req, body, vouch) };
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

/** Request headers a hop ends (RFC 9110 7.6.1) or that undici sets itself. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

/** The client's headers less the hop's own: what a forwarder without checks passes on. */
export function passedHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP.has(name)) out[name] = value;
  }
  return out;
}

/**
 * The lean limits' forwarding (C′, E′): undici's pool dispatch, the answer's head written once when it
 * arrives, its chunks written as they come, the client's hang-up aborting the exchange. `span` (limit E′
 * traced's client span), when given, is ended once: at the answer's head, or with the error when none came.
 */
export function undiciForwarder(upstream: string): {
  forward: (req: IncomingMessage, res: ServerResponse, headers: Record<string, string | string[]>, body: Buffer | null, span?: ClientSpan) => void;
  pool: Pool;
} {
  const pool = new Pool(upstream, { connections: 64, pipelining: 1, keepAliveTimeout: 4000 });
  const forward = (req: IncomingMessage, res: ServerResponse, headers: Record<string, string | string[]>, body: Buffer | null, span?: ClientSpan) => {
    let aborter: ((reason: Error) => void) | undefined;
    const hangUp = () => aborter?.(new Error('the client went away'));
    res.once('close', hangUp);
    pool.dispatch(
      { method: req.method ?? 'GET', path: req.url ?? '/', headers, body },
      {
        onRequestStart(controller) {
          aborter = (reason) => controller.abort(reason);
        },
        onResponseStart(_controller, status, answerHeaders) {
          span?.end(status);
          const out: Record<string, string | string[]> = {};
          for (const name in answerHeaders) if (!HOP.has(name)) out[name] = answerHeaders[name] as string | string[];
          res.writeHead(status, out);
        },
        onResponseData(_controller, chunk) {
          res.write(chunk);
        },
        onResponseEnd() {
          res.off('close', hangUp);
          res.end();
        },
        onResponseError(_controller, err) {
          res.off('close', hangUp);
          if (res.headersSent) {
            res.destroy();
            return;
          }
          span?.end(err);
          refuse(res, 502);
        },
      },
    );
  };
  return { forward, pool };
}

/** The checking limits' upstream headers, for the undici forwarder. */
export function checkedUpstreamHeaders(req: IncomingMessage, body: Buffer, vouch: Vouch | undefined): Record<string, string> {
  return checkedHeaders(req, body, vouch);
}

/**
 * The Express limits' server (D, E): a bare Express 5 app with the services' two switches off, answering
 * `/health/live` and every other request through `handle` once its body is read.
 */
export function expressLimit(handle: (req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<void>): Server {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/health/live', (req, res) => void answeredHealth(req, res));
  app.use(async (req, res) => {
    await handle(req, res, await bodyOf(req));
  });
  return createServer(app);
}
