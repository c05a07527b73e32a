import assert from 'node:assert/strict';
import request from 'supertest';
import { type OpenApiDocument, closeRedis, createMetrics, loadConfig } from '@platform/service-kit';
import { type TestRedis, captureLogger, createTestRedis, unreachableRedis } from '@platform/service-kit/testing';
import { createGateway } from '../src/app.ts';
import { gatewayConfigSpec } from '../src/config.ts';
import { loadApiDocumentFor } from '../src/docs/load-api-document.ts';
import { freshEnvironment } from '@platform/auth/testing';
import { replayBornKey } from '../src/admission/admission.ts';

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

  function buildGateway(redis = testRedis.redis) {
    const config = loadConfig(gatewayConfigSpec, {});
    return createGateway({ config, logger: captureLogger('gateway').logger, redis, metrics: createMetrics('gateway'), lifecycle: { draining: false }, apiDocument });
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
});
