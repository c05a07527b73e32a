import { type KeyObject, generateKeyPairSync } from 'node:crypto';
import { type IncomingHttpHeaders, type IncomingMessage, type RequestOptions, request } from 'node:http';
import { type TestIssuer, createTestIssuer, freshEnvironment } from '@platform/auth/testing';
import { type OpenApiDocument, type Redis, createMetrics, listen, loadConfig } from '@platform/service-kit';
import { type CapturedLogger, captureLogger } from '@platform/service-kit/testing';
import { type Gateway, createGateway } from '../../src/app.ts';
import { type GatewayConfig, gatewayConfigSpec } from '../../src/config.ts';
import { loadApiDocumentFor } from '../../src/docs/load-api-document.ts';
import { replayBornKey } from '../../src/admission/admission.ts';
import { type FakeUpstream, deadUrl, startUpstream } from './fake-upstream.ts';
import type { TestSigningKey } from './signing-client.ts';

/** The client keys every test gateway knows: one of each algorithm; the Ed25519 one is a resource server's, which may introspect tokens. */
export interface TestKeys {
  hmac: TestSigningKey & { alg: 'hmac-sha256' };
  ed25519: TestSigningKey & { alg: 'ed25519' };
  ed25519Public: KeyObject;
}

/** Makes the test client keys (an Ed25519 pair is generated per call). */
export function testKeys(): TestKeys {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    hmac: { keyId: 'test-hmac', alg: 'hmac-sha256', secret: 'test-hmac-secret-0123456789' },
    ed25519: { keyId: 'test-ed25519', alg: 'ed25519', privateKey },
    ed25519Public: publicKey,
  };
}

export interface TestGateway {
  url: string;
  /** The management port: /metrics and /health/*. */
  managementUrl: string;
  keys: TestKeys;
  issuer: TestIssuer;
  identity: FakeUpstream;
  risk: FakeUpstream;
  logs: CapturedLogger;
  /** The configuration it runs with (its timeouts, its assertion key). */
  config: GatewayConfig;
  close: () => Promise<void>;
}

export interface TestGatewayOptions {
  redis: Redis;
  /** Extra or overriding environment, e.g. `{ UPSTREAM_TIMEOUT_MS: '300' }`. */
  env?: Record<string, string>;
  identity?: FakeUpstream;
  risk?: FakeUpstream;
  /** Point the identity route at a port where nothing listens. */
  identityDown?: boolean;
  /** The document whose operations are proxied; the repository's services' documents when omitted. */
  apiDocument?: OpenApiDocument;
  /** Leave the revocation mirror alone (a Redis that is unreachable on purpose, or a test of the mirror itself). */
  keepMirror?: boolean;
}

/** A real gateway on 127.0.0.1:0 with fake upstreams, a JWKS issuer and the given Redis. */
export async function startGateway(options: TestGatewayOptions): Promise<TestGateway> {
  const keys = testKeys();
  const issuer = createTestIssuer();
  // No identity keeps the revocations here: a new environment, as a Redis that never lost its data
  // (CONTRACT.md part 13), its client keys' ledgers born at the epoch.
  if (options.keepMirror !== true) await freshEnvironment(options.redis, [keys.hmac.keyId, keys.ed25519.keyId].map(replayBornKey));
  const jwks = await issuer.serveJwks();
  const identity = options.identity ?? (await startUpstream());
  const risk = options.risk ?? (await startUpstream());
  const config = loadConfig(gatewayConfigSpec, {
    APP_ENV: 'local',
    IDENTITY_URL: options.identityDown ? await deadUrl() : identity.url,
    RISK_URL: risk.url,
    IDENTITY_JWKS_URL: jwks.url,
    TOKEN_ISSUER: issuer.issuer,
    JWT_AUDIENCE: issuer.audience,
    GATEWAY_CLIENT_KEYS: JSON.stringify([
      { keyId: keys.hmac.keyId, alg: 'hmac-sha256', secret: keys.hmac.secret },
      { keyId: keys.ed25519.keyId, alg: 'ed25519', publicKey: keys.ed25519Public.export({ type: 'spki', format: 'pem' }).toString(), introspection: true },
    ]),
    ...options.env,
  });
  const logs = captureLogger('gateway');
  const stopHelpers = () => Promise.all([jwks.close(), options.identity ? undefined : identity.close(), options.risk ? undefined : risk.close()]);
  let gateway: Gateway;
  try {
    gateway = createGateway({
      config,
      logger: logs.logger,
      redis: options.redis,
      metrics: createMetrics('gateway'),
      lifecycle: { draining: false },
      apiDocument: options.apiDocument ?? (await loadApiDocumentFor(config)),
    });
  } catch (err) {
    await stopHelpers();
    throw err;
  }
  const server = await listen(gateway.app, 0, '127.0.0.1');
  const management = await listen(gateway.management, 0, '127.0.0.1');
  return {
    url: server.url,
    managementUrl: management.url,
    keys,
    issuer,
    identity,
    risk,
    logs,
    config,
    close: async () => {
      await Promise.all([server.close(1000), management.close(1000)]);
      await gateway.close();
      await stopHelpers();
    },
  };
}

/** An answer as the client saw it. */
export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body parsed as JSON. */
  json: () => Record<string, unknown>;
}

/**
 * One exchange on a fresh connection, the whole answer read: `url` (or the host, port and path in
 * `options` when it is null) with exactly `options`' headers and `body`'s bytes.
 */
export function exchange(url: string | null, options: RequestOptions, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const onResponse = (res: IncomingMessage) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const buffer = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: buffer, json: () => JSON.parse(buffer.toString('utf8')) as Record<string, unknown> });
      });
      res.on('error', reject);
    };
    // Node frames a GET's, HEAD's or DELETE's body with nothing (no Content-Length, no chunking): the bytes
    // would reach the server as the start of a second, malformed request. Framed as Node frames a POST's.
    const headers = { ...options.headers } as Record<string, string>;
    const framed = Object.keys(headers).some((name) => /^(content-length|transfer-encoding)$/i.test(name));
    if (body !== undefined && body.length > 0 && !framed) headers['content-length'] = String(body.length);
    const sent = { ...options, headers, agent: false };
    const req = url === null ? request(sent, onResponse) : request(url, sent, onResponse);
    // A server may answer before it read the whole body (a 413) and close: the write then fails (EPIPE,
    // ECONNRESET) after the answer came, which is the server's right; the answer is what counts.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.end(body);
  });
}

/** Sends one request with exactly these headers and body bytes (node:http, a fresh connection). */
export function send(base: string, method: string, target: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
  return exchange(`${base}${target}`, { method, headers }, body);
}
