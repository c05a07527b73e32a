import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import express from 'express';
import request from 'supertest';
import { parse } from 'yaml';
import { type OpenApiDocument, createMetrics, loadConfig } from '@platform/service-kit';
import { type TestRedis, captureLogger, createTestRedis } from '@platform/service-kit/testing';
import { type Gateway, createGateway } from '../src/app.ts';
import { gatewayConfigSpec } from '../src/config.ts';
import { docsRouter } from '../src/docs/docs.routes.ts';
import { loadApiDocument } from '../src/docs/load-api-document.ts';
import { operationTable } from '../src/proxy/operation-table.ts';
import { upstreamRoutes } from '../src/proxy/routes.ts';

type Json = Record<string, unknown>;
const config = loadConfig(gatewayConfigSpec, {});
const facts = { maxSkewS: 300, safeTtlS: 600, unsafeTtlS: 86_400, bodyLimitBytes: 102_400 };

function refsOf(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refsOf(v, out);
  else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refsOf(v, out);
    }
  }
  return out;
}

function resolves(doc: Json, ref: string): boolean {
  let at: unknown = doc;
  for (const key of ref.replace(/^#\//, '').split('/')) at = (at as Json | undefined)?.[key];
  return at !== undefined;
}

function operations(doc: Json): Array<[string, Json]> {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) => Object.entries(item as Json).map(([method, op]): [string, Json] => [`${method} ${path}`, op as Json]));
}

/** The operations the gateway proxies: all but those it serves itself. */
function proxied(doc: Json): Array<[string, Json]> {
  return operations(doc).filter(([, op]) => op['x-served-by-gateway'] !== true);
}

describe('the merged API document', () => {
  let doc: OpenApiDocument;
  let identity: Json;
  let risk: Json;

  before(async () => {
    doc = await loadApiDocument({ identityPath: config.IDENTITY_OPENAPI_PATH, riskPath: config.RISK_OPENAPI_PATH }, facts);
    identity = parse(await readFile(config.IDENTITY_OPENAPI_PATH, 'utf8')) as Json;
    risk = parse(await readFile(config.RISK_OPENAPI_PATH, 'utf8')) as Json;
  });

  it('has every path of both services, and the discovery paths the gateway serves itself in place of identity\'s JWKS', () => {
    const expected = [...Object.keys(identity.paths as Json), ...Object.keys(risk.paths as Json), '/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'];
    assert.deepEqual(Object.keys(doc.paths as Json).sort(), expected.sort());
  });

  it('documents the discovery (CONTRACT.md part 16) as the gateway\'s own: GET and HEAD, unsigned, x-served-by-gateway, proxied never', () => {
    const discovery = operations(doc).filter(([, op]) => op['x-served-by-gateway'] === true);
    assert.deepEqual(discovery.map(([name]) => name).sort(), [
      'get /.well-known/jwks.json',
      'get /.well-known/oauth-authorization-server',
      'get /.well-known/openid-configuration',
      'head /.well-known/jwks.json',
      'head /.well-known/oauth-authorization-server',
      'head /.well-known/openid-configuration',
    ]);
    for (const [name, op] of discovery) {
      assert.deepEqual(op.security, [], name);
      assert.deepEqual(Object.keys(op.responses as Json).sort(), name.endsWith('jwks.json') ? ['200', '304', '503'] : ['200', '304'], name);
    }
    const [, jwks] = discovery.find(([name]) => name === 'get /.well-known/jwks.json')!;
    assert.deepEqual(((jwks.responses as Json)['200'] as Json).content, { 'application/json': { schema: { $ref: '#/components/schemas/Jwks' } } });
    const table = operationTable(doc, Object.values(upstreamRoutes({ identity: config.IDENTITY_URL, risk: config.RISK_URL })));
    assert.deepEqual(table.operations.filter((op) => op.template.startsWith('/.well-known/')), []);
    assert.equal(table.match('GET', '/.well-known/jwks.json'), undefined);
  });

  it('requires the signature and the idempotency key on every proxied operation, on top of its own security', () => {
    for (const [name, op] of proxied(doc)) {
      const security = op.security as Json[];
      assert.ok(security.length > 0 && security.every((s) => 'requestSignature' in s), name);
      assert.deepEqual((op.parameters as Json[])[0], { $ref: '#/components/parameters/IdempotencyKey' }, name);
      for (const status of ['401', '409', '429', '502', '503', '504']) assert.ok(status in (op.responses as Json), `${name} ${status}`);
    }
    const [, login] = operations(doc).find(([name]) => name === 'post /v1/auth/login')!;
    assert.deepEqual(login.security, [{ requestSignature: [] }]);
    const [, cities] = operations(doc).find(([name]) => name === 'get /v1/weather-stations/get-cities')!;
    assert.deepEqual(cities.security, [{ bearerAuth: [], requestSignature: [] }]);
  });

  it('documents the rate limit (CONTRACT.md part 12): 429 with Retry-After and the RateLimit fields, which every answer of its own carries', () => {
    const limited = ((doc.components as Json).responses as Json).GatewayRateLimited as Json;
    assert.deepEqual(Object.keys(limited.headers as Json).sort(), ['RateLimit', 'RateLimit-Policy', 'Retry-After']);
    for (const [name, op] of proxied(doc)) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        const r = response as Json;
        if (typeof r.$ref === 'string') continue;
        assert.deepEqual(Object.keys(r.headers as Json).filter((h) => h.startsWith('RateLimit')).sort(), ['RateLimit', 'RateLimit-Policy'], `${name} ${status}`);
      }
    }
    assert.match(String((doc.info as Json).description), /## Rate limits[\s\S]*RateLimit-Policy: "default";q=10000;w=1/);
  });

  it('resolves every $ref, and describes the signing scheme with the configured window', () => {
    for (const ref of refsOf(doc)) assert.ok(resolves(doc, ref), ref);
    const schemes = (doc.components as Json).securitySchemes as Json;
    assert.deepEqual(Object.keys(schemes).sort(), ['bearerAuth', 'requestSignature']);
    assert.match(String((schemes.requestSignature as Json).description), /sig1.*\n[\s\S]*±300 s/);
  });
});

describe('GET /openapi.json and GET /docs', () => {
  let testRedis: TestRedis;
  let doc: OpenApiDocument;

  before(async () => {
    testRedis = await createTestRedis('gw-docs');
    doc = await loadApiDocument({ identityPath: config.IDENTITY_OPENAPI_PATH, riskPath: config.RISK_OPENAPI_PATH }, facts);
  });
  afterEach(async () => {
    await Promise.all(built.splice(0).map((gateway) => gateway.close()));
  });
  after(async () => {
    await testRedis.close();
  });

  // Each gateway built here is closed after its test (its background work: the JWKS refresh, the stamp watch;
  // its watch of the shared Redis client's connection events, which piled up over the file's tests).
  const built: Gateway[] = [];
  const build = (apiDocument: OpenApiDocument) => {
    const gateway = createGateway({ config, logger: captureLogger('gateway').logger, redis: testRedis.redis, metrics: createMetrics('gateway'), lifecycle: { draining: false }, apiDocument });
    built.push(gateway);
    return gateway.app;
  };

  it('when asked without a signature, answers the merged document as JSON', async () => {
    const res = await request(build(doc)).get('/openapi.json');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] ?? '', /^application\/json/);
    assert.deepEqual(res.body, JSON.parse(JSON.stringify(doc)));
  });

  it('answers a self-contained HTML reference: every operation, no script, nothing fetched from elsewhere', async () => {
    const res = await request(build(doc)).get('/docs');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] ?? '', /^text\/html/);
    assert.match(res.headers['content-security-policy'] ?? '', /default-src 'none'/);
    for (const [name] of operations(doc)) {
      const [method, path] = name.split(' ');
      assert.ok(res.text.includes(`${method!.toUpperCase()}</span> <code>${path!}</code>`), name);
    }
    assert.doesNotMatch(res.text, /<script|<link|src=|https?:\/\/(?!localhost)[a-z]/i);
  });

  it('renders the page on its first request: two first requests at once get the same whole page', async () => {
    const app = build(doc);
    const [a, b] = await Promise.all([request(app).get('/docs'), request(app).get('/docs')]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.equal(a.text, b.text);
    assert.match(a.text, /<\/html>\s*$/);
  });

  it('answers a page it cannot render with a 500 in the error shape, and tries again on the next request', async () => {
    // A response that names nothing: the page cannot be rendered from it (the API itself is unaffected).
    const broken = structuredClone(doc);
    const isOperation = (o: unknown): o is { responses: Record<string, unknown> } => typeof o === 'object' && o !== null && 'responses' in o;
    const operation = Object.values(broken.paths ?? {})
      .flatMap((item) => Object.values(item ?? {}) as unknown[])
      .find(isOperation);
    assert.ok(operation !== undefined, 'the document has an operation');
    operation.responses['599'] = { $ref: '#/components/responses/Nothing' };
    const app = build(broken);
    const first = await request(app).get('/docs');
    assert.equal(first.status, 500);
    assert.equal(first.body.status, 500);
    assert.doesNotMatch(first.text, /Nothing|\$ref|at .*\.ts/);
    // Mended, the same gateway renders it: a failed render was not kept.
    delete operation.responses['599'];
    const second = await request(app).get('/docs');
    assert.equal(second.status, 200);
  });

  it('when something answered before the page was ready (the request deadline), leaves that answer alone: no write, no error', async () => {
    const unhandled: unknown[] = [];
    const errors: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const app = express();
      // As the deadline's 503 does: the answer is sent, and the docs route still runs.
      app.use((_req, res, next) => {
        res.status(503).json({ status: 503 });
        next();
      });
      app.use(docsRouter(doc));
      app.use((err: unknown, _req: express.Request, _res: express.Response, next: express.NextFunction) => {
        errors.push(err);
        next(err);
      });
      const res = await request(app).get('/docs');
      assert.equal(res.status, 503);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.deepEqual(unhandled, []);
      assert.deepEqual(errors, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('when asked with another method, answers 405', async () => {
    assert.equal((await request(build(doc)).post('/docs')).status, 405);
    assert.equal((await request(build(doc)).delete('/openapi.json')).status, 405);
  });
});
