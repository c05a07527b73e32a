import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { parse } from 'yaml';
import { closeRedis, createMetrics, loadConfig } from '@platform/service-kit';
import {
  type TestDatabase,
  type TestRedis,
  captureLogger,
  createTestDatabase,
  createTestRedis,
  unreachableRedis,
} from '@platform/service-kit/testing';
import { migrations } from '../migrations/index.ts';
import { OPENAPI_PATH, createApp } from '../src/app.ts';
import { riskConfigSpec } from '../src/config.ts';

describe('risk app', () => {
  let database: TestDatabase;
  let testRedis: TestRedis;

  before(async () => {
    database = await createTestDatabase('risk', migrations);
    testRedis = await createTestRedis('risk');
  });
  after(async () => {
    await testRedis.close();
    await database.drop();
  });

  function build(redis = testRedis.redis) {
    const config = loadConfig(riskConfigSpec, { OPENAPI_VALIDATE_RESPONSES: 'true' });
    const log = captureLogger('risk');
    return createApp({ config, logger: log.logger, db: database.db, redis, metrics: createMetrics('risk'), lifecycle: { draining: false } });
  }

  it('the migrations create the station tables with their rules in the database', async () => {
    await assert.rejects(
      database.db('stations').insert({ station_id: 1, station_name: 'X', latitude: 91, longitude: 30, city: 'Ankara' }),
      /stations_coordinates/,
    );
    await assert.rejects(
      database.db('districts').insert({ city: 'Ankara', district: 'Çankaya', plate_code: 82 }),
      /districts_plate_code_range/,
    );
    await assert.rejects(
      database.db('mgm_centers').insert({
        merkez_id: 1,
        center_name: 'X',
        city: 'Ankara',
        plate_code: 6,
        is_district_centre: true,
        latitude: 40,
        longitude: 32,
        observation_station_id: 99999,
      }),
      /foreign key/,
    );
  });

  it('GET /health/ready answers 200 with Postgres and Redis up, 503 with Redis down', async () => {
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

  it('the document describes the four station operations of SPEC.md and nearest', () => {
    const document = parse(readFileSync(OPENAPI_PATH, 'utf8')) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((k) => ['get', 'post', 'patch', 'put', 'delete'].includes(k))
        .map((method) => `${method.toUpperCase()} ${path}`),
    );
    assert.deepEqual(operations.sort(), [
      'GET /v1/weather-stations/by/id/{stationId}',
      'GET /v1/weather-stations/get-cities',
      'GET /v1/weather-stations/get-districts-of/{city}',
      'GET /v1/weather-stations/nearest',
      'POST /v1/weather-stations/by/city-district',
    ]);
  });

  it('every error body carries messages: unknown path 404, bad station id 400, limit out of range 400, operation not built 501', async () => {
    const app = build();
    const unknown = await request(app).get('/v1/weather-stations/nope');
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body.messages, [unknown.body.message]);
    assert.ok(unknown.headers['x-request-id']);

    const badId = await request(app).get('/v1/weather-stations/by/id/abc');
    assert.equal(badId.status, 400);
    assert.equal(badId.body.messages.length, 1);
    assert.match(badId.body.messages[0], /^path\.stationId /);

    const badLimit = await request(app).post('/v1/weather-stations/by/city-district').send({ city: 'Ankara', district: 'Keçiören', limit: 1001 });
    assert.equal(badLimit.status, 400);
    assert.match(badLimit.body.messages[0], /^body\.limit /);

    const notBuilt = await request(app).get('/v1/weather-stations/get-cities');
    assert.equal(notBuilt.status, 501);
    assert.deepEqual(notBuilt.body.messages, ['GET /v1/weather-stations/get-cities is documented but not available yet']);
  });
});
