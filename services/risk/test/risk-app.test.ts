import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { parse } from 'yaml';
import { closeRedis } from '@platform/service-kit';
import { unreachableRedis } from '@platform/service-kit/testing';
import { OPENAPI_PATH } from '../src/app.ts';
import { type RiskTestContext, startRiskTestContext } from './support/risk-test-context.ts';

describe('risk app', () => {
  let ctx: RiskTestContext;

  before(async () => {
    ctx = await startRiskTestContext('risk_app');
  });
  after(async () => {
    await ctx.close();
  });

  it('the migrations create the station tables with their rules in the database', async () => {
    const db = ctx.database.db;
    await assert.rejects(
      db('stations').insert({ station_id: 1, station_name: 'X', latitude: 91, longitude: 30, city: 'Ankara' }),
      /stations_coordinates/,
    );
    await assert.rejects(db('districts').insert({ city: 'Ankara', district: 'Çankaya', plate_code: 82 }), /districts_plate_code_range/);
    await assert.rejects(
      db('mgm_centers').insert({
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

  it('GET /health/ready answers 200 with the index loaded and Redis up, 503 naming Redis when it is down', async () => {
    const ready = await request(ctx.url).get('/health/ready');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body.checks, { 'station-index': 'up', redis: 'up' });
    const redis = unreachableRedis();
    try {
      const res = await request(await ctx.serve({ redis })).get('/health/ready');
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

  it('every error body carries messages: unknown path 404, wrong method 405, malformed JSON 400, wrong content type 415', async () => {
    const unknown = await request(ctx.url).get('/v1/weather-stations/nope').set('Authorization', ctx.auth());
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.body.messages, [unknown.body.message]);
    assert.ok(unknown.headers['x-request-id']);

    const wrongMethod = await request(ctx.url).delete('/v1/weather-stations/get-cities').set('Authorization', ctx.auth());
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.allow, 'GET');
    assert.equal(wrongMethod.body.messages.length, 1);

    const malformed = await request(ctx.url)
      .post('/v1/weather-stations/by/city-district')
      .set('Authorization', ctx.auth())
      .set('Content-Type', 'application/json')
      .send('{"city": "Ankara",');
    assert.equal(malformed.status, 400);
    assert.deepEqual(malformed.body.messages, ['Request body is not valid JSON']);

    const text = await request(ctx.url)
      .post('/v1/weather-stations/by/city-district')
      .set('Authorization', ctx.auth())
      .set('Content-Type', 'text/plain')
      .send('Ankara');
    assert.equal(text.status, 415);
    assert.equal(text.body.messages.length, 1);
  });
});
