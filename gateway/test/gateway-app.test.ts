import assert from 'node:assert/strict';
import request from 'supertest';
import { type OpenApiDocument, closeRedis, createMetrics, loadConfig } from '@platform/service-kit';
import { type TestRedis, captureLogger, createTestRedis, unreachableRedis } from '@platform/service-kit/testing';
import { createGateway } from '../src/app.ts';
import { gatewayConfigSpec } from '../src/config.ts';
import { loadApiDocumentFor } from '../src/docs/load-api-document.ts';
import { freshEnvironment } from '@platform/auth/testing';
import { replayBornKey } from '../src/admission/admission.ts';
import { signedHeaders } from './support/signing-client.ts';

describe('gateway app', () => {
  let testRedis: TestRedis;
  let apiDocument: OpenApiDocument;

  before(async () => {
    testRedis = await createTestRedis('gateway');
    // A new environment, not a Redis that lost its data: the local key's replay store is whole from the start.
    await freshEnvironment(testRedis.redis, [replayBornKey('local-dev')]);
    apiDocument = await loadApiDocumentFor(loadConfig(gatewayConfigSpec, {}));
  });
  after(async () => {
    await testRedis.close();
  });

  // Every gateway a test builds is closed after it: each watches the shared Redis client (its connection's
  // events), and one left open keeps its listeners there for the rest of the file.
  const built: Array<ReturnType<typeof createGateway>> = [];
  afterEach(async () => {
    await Promise.all(built.splice(0).map((gateway) => gateway.close()));
  });

  function buildGateway(redis = testRedis.redis, env: Record<string, string> = {}, extra: Partial<Parameters<typeof createGateway>[0]> = {}) {
    const config = loadConfig(gatewayConfigSpec, env);
    const gateway = createGateway({ config, logger: captureLogger('gateway').logger, redis, metrics: createMetrics('gateway'), lifecycle: { draining: false }, apiDocument, ...extra });
    built.push(gateway);
    return gateway;
  }
  const build = (redis = testRedis.redis) => buildGateway(redis).app;

  it('GET /health/ready answers 200 while Redis answers, and 503 when it does not (the gateway fails closed)', async () => {
    assert.equal((await request(build()).get('/health/ready')).status, 200);
    const redis = unreachableRedis();
    try {
      const res = await request(build(redis)).get('/health/ready');
      assert.equal(res.status, 503);
      assert.deepEqual(res.body.messages, ['redis is unreachable']);
    } finally {
      await closeRedis(redis);
    }
  });

  it('an unknown path answers 404 in the error shape with an X-Request-Id of the gateway\'s own, never the client\'s', async () => {
    const res = await request(build()).get('/nowhere').set('X-Request-Id', 'gw-req-1');
    assert.equal(res.status, 404);
    assert.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    assert.deepEqual(res.body, { timestamp: res.body.timestamp, status: 404, error: 'Not Found', message: 'No route for GET /nowhere', path: '/nowhere' });
  });

  it('an unsigned API request answers 400 or 401 in the error shape, never reaching an upstream', async () => {
    const noKey = await request(build()).post('/v1/auth/login').send({ username: 'a@example.com', password: 'x' });
    assert.equal(noKey.status, 400);
    assert.equal(noKey.body.message, 'Missing X-Idempotency-Key header');
    const unsigned = await request(build()).post('/v1/auth/login').set('X-Idempotency-Key', 'k-1').send({ username: 'a@example.com', password: 'x' });
    assert.equal(unsigned.status, 401);
    assert.equal(unsigned.body.message, 'Invalid request signature');
  });

  it('GET /metrics is served on the management port only, in the Prometheus text format; health on both (CONTRACT.md part 10)', async () => {
    const { app, management } = buildGateway();
    await request(app).get('/nowhere');
    const hidden = await request(app).get('/metrics');
    assert.equal(hidden.status, 404);
    assert.equal(hidden.body.message, 'No route for GET /metrics');
    const res = await request(management).get('/metrics');
    assert.equal(res.status, 200);
    assert.match(res.text, /^http_requests_total\{.*route="unmatched".*status="404".*\} 2$/m);
    for (const path of ['/health/live', '/health/ready']) {
      assert.equal((await request(app).get(path)).status, 200, path);
      assert.equal((await request(management).get(path)).status, 200, path);
    }
    assert.equal((await request(management).get('/v1/weather-stations/get-cities')).status, 404, 'the management port serves no API');
  });

  describe('the documented operations, dispatched ahead of Express (pipeline/api-front.ts)', () => {
    const STATIONS = '/v1/weather-stations/get-cities';
    const ORIGIN = 'https://app.example';
    /** The headers every answer of the gateway carries, whichever way it went. */
    const COMMON = ['access-control-allow-origin', 'access-control-expose-headers', 'cache-control', 'content-security-policy', 'content-type', 'cross-origin-opener-policy', 'referrer-policy', 'vary', 'x-content-type-options', 'x-frame-options', 'x-request-id'];

    it('answers an operation (front) with the headers and error shape of an answer of the Express app (a 405 on the same path)', async () => {
      const gateway = buildGateway(testRedis.redis, { CORS_ORIGINS: ORIGIN });
      try {
        const front = await request(gateway.app).get(STATIONS).set('X-Idempotency-Key', 'k-front').set('Origin', ORIGIN);
        const express = await request(gateway.app).delete(STATIONS).set('X-Idempotency-Key', 'k-express').set('Origin', ORIGIN);
        assert.equal(front.status, 401);
        assert.equal(express.status, 405);
        for (const res of [front, express]) {
          for (const name of COMMON) assert.ok(res.headers[name] !== undefined, `${res.status} ${name}`);
          assert.equal(res.headers.vary, 'Origin');
          assert.equal(res.headers['access-control-allow-origin'], ORIGIN);
          assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
          assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.text));
          // A station path: `messages` on every error body (CONTRACT.md part 7), whichever way it went.
          assert.deepEqual(Object.keys(res.body), ['timestamp', 'status', 'error', 'message', 'path', 'messages']);
          assert.equal(res.body.path, STATIONS);
        }
        assert.equal(front.body.message, 'Invalid request signature');
        assert.equal(express.headers.allow, 'GET');
      } finally {
        await gateway.close();
      }
    });

    it('when a step throws something that is no HttpError (a fault of the gateway), answers 500 in the error shape and logs the cause with the request', async () => {
      const log = captureLogger('gateway');
      const broken = { get: (): undefined => {
        throw new TypeError('key store exploded');
      } };
      const config = loadConfig(gatewayConfigSpec, {});
      const gateway = createGateway({ config, logger: log.logger, redis: testRedis.redis, metrics: createMetrics('gateway'), lifecycle: { draining: false }, apiDocument, clientKeys: broken });
      try {
        const { app } = gateway;
        const headers = signedHeaders('GET', STATIONS, { key: { keyId: 'local-dev', alg: 'hmac-sha256', secret: 'local-dev-secret' } });
        const res = await request(app).get(STATIONS).set(headers);
        assert.equal(res.status, 500);
        assert.deepEqual(Object.keys(res.body), ['timestamp', 'status', 'error', 'message', 'path', 'messages']);
        assert.ok(!res.text.includes('exploded'));
        const line = log.lines().find((l) => l.msg === 'GET 500');
        assert.ok(line, log.text());
        assert.equal(line.level, 'error');
        assert.match(String((line.err as { stack?: string }).stack), /key store exploded/);
        assert.equal((line.req as { id?: string }).id, res.headers['x-request-id']);
      } finally {
        await gateway.close();
      }
    });
  });
});
