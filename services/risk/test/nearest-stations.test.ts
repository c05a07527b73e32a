import assert from 'node:assert/strict';
import request from 'supertest';
import { assertMatchesSchema } from './support/openapi-schema.ts';
import { type RiskTestContext, startRiskTestContext } from './support/risk-test-context.ts';
import { files, stationInFile } from './support/station-files.ts';

const PATH = '/v1/weather-stations/nearest';

/** Haversine written out here on its own, so the service's distance code is not checked against itself. */
function haversineKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const rad = Math.PI / 180;
  const a = Math.sin(((lat2 - lat1) * rad) / 2) ** 2 + Math.cos(lat1 * rad) * Math.cos(lat2 * rad) * Math.sin(((lon2 - lon1) * rad) / 2) ** 2;
  return 2 * 6371.0088 * Math.asin(Math.sqrt(a));
}

/** Every station of stations.csv by distance from the point, ties by id: the slow, obviously right answer. */
function byDistance(latitude: number, longitude: number) {
  return files.stations
    .map((s) => ({ id: s.station_id, km: haversineKm(latitude, longitude, s.latitude, s.longitude) }))
    .sort((a, b) => a.km - b.km || a.id - b.id);
}

interface Answer {
  stationId: number;
  distanceKm: number;
}

describe('GET /v1/weather-stations/nearest', () => {
  let ctx: RiskTestContext;

  before(async () => {
    ctx = await startRiskTestContext('risk_nearest');
  });
  after(async () => {
    await ctx.close();
  });

  const nearest = (query: string) => request(ctx.url).get(`${PATH}?${query}`).set('Authorization', ctx.auth());

  it('when asked near Esenboğa airport (40.128, 32.995), answers 17128 first, then 4 more, nearest first', async () => {
    const res = await nearest('latitude=40.128&longitude=32.995');
    assert.equal(res.status, 200);
    const body = res.body as Answer[];
    assert.equal(body.length, 5);
    assert.equal(body[0]!.stationId, 17128);
    assert.deepEqual(
      body.map(({ distanceKm: _km, ...station }) => station),
      body.map((s) => stationInFile(s.stationId)),
    );
    assert.deepEqual(
      body.map((s) => s.stationId),
      byDistance(40.128, 32.995)
        .slice(0, 5)
        .map((s) => s.id),
    );
    for (const station of body) assertMatchesSchema(station, 'StationWithDistance');
  });

  it('answers distanceKm as the great-circle distance rounded to 0.01 km, in ascending order', async () => {
    const [latitude, longitude] = [38.4192, 27.1287];
    const res = await nearest(`latitude=${latitude}&longitude=${longitude}&limit=100`);
    assert.equal(res.status, 200);
    const body = res.body as Answer[];
    const expected = byDistance(latitude, longitude).slice(0, 100);
    assert.deepEqual(
      body.map((s) => s.stationId),
      expected.map((s) => s.id),
    );
    body.forEach((s, i) => {
      assert.equal(s.distanceKm, Math.round(expected[i]!.km * 100) / 100, `station ${s.stationId}`);
      if (i > 0) assert.ok(s.distanceKm >= body[i - 1]!.distanceKm);
    });
  });

  for (const [limit, count] of [
    ['1', 1],
    ['100', 100],
  ] as const) {
    it(`when limit is ${limit}, answers ${count} stations`, async () => {
      const res = await nearest(`latitude=41&longitude=29&limit=${limit}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.length, count);
    });
  }

  it('when the point is far from Turkey, still answers the nearest stations', async () => {
    const res = await nearest('latitude=-33.86&longitude=151.21&limit=3');
    assert.equal(res.status, 200);
    assert.deepEqual(
      (res.body as Answer[]).map((s) => s.stationId),
      byDistance(-33.86, 151.21)
        .slice(0, 3)
        .map((s) => s.id),
    );
  });

  for (const [query, parameter] of [
    ['latitude=90.5&longitude=30', 'latitude'],
    ['latitude=-91&longitude=30', 'latitude'],
    ['latitude=40&longitude=180.01', 'longitude'],
    ['latitude=40&longitude=-181', 'longitude'],
    ['latitude=abc&longitude=30', 'latitude'],
    ['latitude=&longitude=30', 'latitude'],
    ['longitude=30', 'latitude'],
    ['latitude=40', 'longitude'],
    ['latitude=40&longitude=30&limit=0', 'limit'],
    ['latitude=40&longitude=30&limit=101', 'limit'],
    ['latitude=40&longitude=30&limit=2.5', 'limit'],
    // Not finite, or not written as a decimal number: JavaScript's coercion would take each of these.
    ['latitude=-Infinity&longitude=37.5&limit=3', 'latitude'],
    ['latitude=Infinity&longitude=37.5', 'latitude'],
    ['latitude=1e400&longitude=37.5', 'latitude'],
    ['latitude=NaN&longitude=37.5', 'latitude'],
    ['latitude=0x10&longitude=37.5', 'latitude'],
    ['latitude=%20&longitude=37.5', 'latitude'],
    ['latitude=4e1&longitude=37.5', 'latitude'],
    ['latitude=40&longitude=+37.5', 'longitude'],
    ['latitude=40&longitude=37.5&limit=Infinity', 'limit'],
    ['latitude=40&longitude=37.5&limit=1e400', 'limit'],
    ['latitude=40&longitude=37.5&limit=1e1', 'limit'],
    ['latitude=40&longitude=37.5&limit=0x5', 'limit'],
    ['latitude=40&longitude=37.5&limit=10.0', 'limit'],
  ] as const) {
    it(`when the query is "${query}", answers 400 naming query.${parameter}`, async () => {
      const res = await nearest(query);
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'Bad Request');
      assert.equal(res.body.messages.length, 1, res.body.messages.join('; '));
      assert.ok(res.body.messages[0].startsWith(`query.${parameter} `), res.body.messages[0]);
    });
  }

  it('when a parameter is given twice and one value is not finite, answers 400', async () => {
    const res = await nearest('latitude=40&latitude=Infinity&longitude=30');
    assert.equal(res.status, 400);
  });

  it('when the numbers are written plainly at the edges of their bounds, answers 200', async () => {
    for (const query of ['latitude=-90&longitude=-180&limit=1', 'latitude=90.0&longitude=180&limit=100', 'latitude=-0&longitude=0.000001&limit=007']) {
      const res = await nearest(query);
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
      for (const station of res.body as Answer[]) assert.ok(Number.isFinite(station.distanceKm), query);
    }
  });
});
