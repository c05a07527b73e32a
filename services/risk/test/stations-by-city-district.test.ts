import assert from 'node:assert/strict';
import request from 'supertest';
import { assertMatchesSchema } from './support/openapi-schema.ts';
import { type RiskTestContext, startRiskTestContext } from './support/risk-test-context.ts';
import { districtsServedInFile, stationsServingInFile } from './support/station-files.ts';

const PATH = '/v1/weather-stations/by/city-district';

describe('POST /v1/weather-stations/by/city-district', () => {
  let ctx: RiskTestContext;

  before(async () => {
    ctx = await startRiskTestContext('risk_by_city_district');
  });
  after(async () => {
    await ctx.close();
  });

  const find = (body: object) => request(ctx.url).post(PATH).set('Authorization', ctx.auth()).send(body);

  it('when the city and district are spelled canonically, answers the stations mgm_centers.csv names for it, by stationId', async () => {
    const res = await find({ city: 'Ankara', district: 'Keçiören' });
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] ?? '', /^application\/json/);
    const expected = stationsServingInFile('Ankara', 'Keçiören');
    assert.ok(expected.length > 0);
    assert.deepEqual(res.body, expected);
    for (const station of res.body as unknown[]) assertMatchesSchema(station, 'Station');
  });

  for (const city of ['istanbul', 'ISTANBUL', 'İstanbul', 'Istanbul', '  istanbul ']) {
    it(`when the city is written "${city}", answers İstanbul's stations in canonical spelling`, async () => {
      const res = await find({ city, district: 'bağcılar' });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, stationsServingInFile('İstanbul', 'Bağcılar'));
    });
  }

  it('when the city is written "sanliurfa", answers Şanlıurfa\'s stations', async () => {
    const res = await find({ city: 'sanliurfa', district: 'haliliye' });
    assert.equal(res.status, 200);
    const expected = stationsServingInFile('Şanlıurfa', 'Haliliye');
    assert.ok(expected.length > 0);
    assert.deepEqual(res.body, expected);
  });

  for (const district of ['KEÇİÖREN', 'kecioren', 'KECIOREN']) {
    it(`when the district is written "${district}", answers Keçiören's stations`, async () => {
      const res = await find({ city: 'ANKARA', district });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, stationsServingInFile('Ankara', 'Keçiören'));
    });
  }

  it('when a station serves several districts (17814), it is found from each of them', async () => {
    const served = districtsServedInFile(17814);
    assert.ok(served.length > 1, 'the data has 17814 serving several districts');
    assert.ok(served.some((d) => d.city === 'İstanbul' && d.district === 'Bağcılar'));
    for (const { city, district } of served) {
      const res = await find({ city, district });
      assert.equal(res.status, 200);
      assert.ok(
        (res.body as Array<{ stationId: number }>).some((s) => s.stationId === 17814),
        `${city}/${district} lists 17814`,
      );
    }
  });

  for (const [city, district] of [
    ['Trabzon', 'Beşikdüzü'],
    ['Trabzon', 'Dernekpazarı'],
    ['Hakkari', 'Derecik'],
  ] as const) {
    it(`when the official district ${city}/${district} has no station, answers 200 []`, async () => {
      const res = await find({ city, district });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, []);
    });
  }

  describe('limit', () => {
    const city = 'Ankara';
    const district = 'Limitköy';
    const ids = Array.from({ length: 12 }, (_, i) => 99_100 + i);

    before(async () => {
      // A district served by more stations than the default limit, which the real data has none of.
      await ctx.database.db.transaction(async (trx) => {
        await trx('districts').insert({ city, district, plate_code: 6 });
        await trx('stations').insert(
          ids.map((id) => ({ station_id: id, station_name: `Test ${id}`, latitude: 39.9, longitude: 32.8, city, district })),
        );
        // Inserted in reverse: the answer's order must come from the ids, not from the rows.
        await trx('mgm_centers').insert(
          [...ids].reverse().map((id) => ({
            merkez_id: id,
            center_name: `Test ${id}`,
            city,
            plate_code: 6,
            district,
            is_district_centre: false,
            latitude: 39.9,
            longitude: 32.8,
            observation_station_id: id,
          })),
        );
      });
      assert.equal(await ctx.stations.refresh(), true);
    });

    it('when limit is left out, answers the first 10 by stationId', async () => {
      const res = await find({ city, district });
      assert.equal(res.status, 200);
      assert.deepEqual(
        (res.body as Array<{ stationId: number }>).map((s) => s.stationId),
        ids.slice(0, 10),
      );
    });

    for (const [limit, count] of [
      [1, 1],
      [11, 11],
      [1000, 12],
    ] as const) {
      it(`when limit is ${limit}, answers ${count} stations`, async () => {
        const res = await find({ city, district, limit });
        assert.equal(res.status, 200);
        assert.deepEqual(
          (res.body as Array<{ stationId: number }>).map((s) => s.stationId),
          ids.slice(0, count),
        );
        for (const station of res.body as unknown[]) assertMatchesSchema(station, 'Station');
      });
    }

    for (const limit of [0, 1001, 1.5, 'ten', -1]) {
      it(`when limit is ${JSON.stringify(limit)}, answers 400 naming body.limit`, async () => {
        const res = await find({ city, district, limit });
        assert.equal(res.status, 400);
        assert.equal(res.body.status, 400);
        assert.equal(res.body.error, 'Bad Request');
        assert.equal(res.body.path, PATH);
        assert.ok(res.body.messages.length >= 1);
        assert.ok((res.body.messages as string[]).every((m) => m.startsWith('body.limit ')), res.body.messages.join('; '));
      });
    }
  });

  it('when the city is unknown, answers 404 with messages naming it', async () => {
    const res = await find({ city: 'Atlantis', district: 'Merkez' });
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'Not Found');
    assert.deepEqual(res.body.messages, ['City not found: Atlantis']);
  });

  it('when the district is not one of the city\'s official districts, answers 404 with messages naming it', async () => {
    for (const district of ['Nowhere', 'Kadıköy']) {
      const res = await find({ city: 'ankara', district });
      assert.equal(res.status, 404);
      assert.deepEqual(res.body.messages, [`District not found in Ankara: ${district}`]);
    }
  });

  it('when the body misses the district or has an unknown field, answers 400 with one message per problem', async () => {
    const res = await find({ city: 'Ankara', town: 'Keçiören' });
    assert.equal(res.status, 400);
    const messages = res.body.messages as string[];
    assert.equal(messages.length, 2, messages.join('; '));
    assert.ok(messages.some((m) => m.startsWith('body.district ')));
    assert.ok(messages.some((m) => m.startsWith('body.town ')));
  });
});
