import assert from 'node:assert/strict';
import request from 'supertest';
import { type RiskTestContext, startRiskTestContext } from './support/risk-test-context.ts';
import { citiesInFile, districtsInFile, files, inTurkishOrder } from './support/station-files.ts';

describe('city and district lists', () => {
  let ctx: RiskTestContext;

  before(async () => {
    ctx = await startRiskTestContext('risk_places');
  });
  after(async () => {
    await ctx.close();
  });

  const get = (path: string) => request(ctx.url).get(path).set('Authorization', ctx.auth());

  describe('GET /v1/weather-stations/get-cities', () => {
    it('answers the 81 official cities in Turkish alphabetical order (the order of provinces_districts.csv)', async () => {
      const res = await get('/v1/weather-stations/get-cities');
      assert.equal(res.status, 200);
      assert.match(res.headers['content-type'] ?? '', /^application\/json/);
      assert.equal(res.body.length, 81);
      assert.deepEqual(res.body, citiesInFile());
      assert.deepEqual(res.body, inTurkishOrder(citiesInFile()));
      // The Turkish letters sort after their Latin neighbours, not after z.
      const cities = res.body as string[];
      assert.ok(cities.indexOf('Çorum') < cities.indexOf('Denizli'));
      assert.ok(cities.indexOf('Iğdır') < cities.indexOf('Isparta') && cities.indexOf('Isparta') < cities.indexOf('İstanbul'));
    });
  });

  describe('GET /v1/weather-stations/get-districts-of/{city}', () => {
    it('when the city is percent-encoded (%C4%B0stanbul), answers İstanbul\'s official districts in Turkish order', async () => {
      const res = await get('/v1/weather-stations/get-districts-of/%C4%B0stanbul');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, inTurkishOrder(districtsInFile('İstanbul')));
      assert.equal(res.body.length, 39);
    });

    for (const city of ['istanbul', 'ISTANBUL', 'Istanbul', encodeURIComponent('İSTANBUL'), encodeURIComponent(' istanbul ')]) {
      it(`when the city is written "${city}", answers İstanbul's districts`, async () => {
        const res = await get(`/v1/weather-stations/get-districts-of/${city}`);
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, inTurkishOrder(districtsInFile('İstanbul')));
      });
    }

    it('when the city is written "sanliurfa", answers Şanlıurfa\'s districts in canonical spelling', async () => {
      const res = await get('/v1/weather-stations/get-districts-of/sanliurfa');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, inTurkishOrder(districtsInFile('Şanlıurfa')));
      assert.ok((res.body as string[]).includes('Eyyübiye'));
    });

    it('when the city has a district whose name starts with a digit, lists it first, as Turkish collation does', async () => {
      const res = await get('/v1/weather-stations/get-districts-of/samsun');
      assert.equal(res.status, 200);
      assert.equal(res.body[0], '19 Mayıs');
      assert.equal(res.body[1], 'Alaçam');
    });

    it('when every city is asked for, the districts add up to the 973 official ones', async () => {
      let total = 0;
      for (const city of citiesInFile()) {
        const res = await get(`/v1/weather-stations/get-districts-of/${encodeURIComponent(city)}`);
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, inTurkishOrder(districtsInFile(city)));
        total += (res.body as string[]).length;
      }
      assert.equal(total, files.districts.length);
      assert.equal(total, 973);
    });

    it('when the segment is percent-encoded twice, decodes it once only and answers 404', async () => {
      const res = await get('/v1/weather-stations/get-districts-of/%25C4%25B0stanbul');
      assert.equal(res.status, 404);
      assert.deepEqual(res.body.messages, ['City not found: %C4%B0stanbul']);
      assert.equal(res.body.path, '/v1/weather-stations/get-districts-of/%25C4%25B0stanbul');
    });

    it('when the city is unknown, answers 404 with messages naming it', async () => {
      const res = await get('/v1/weather-stations/get-districts-of/Atlantis');
      assert.equal(res.status, 404);
      assert.equal(res.body.error, 'Not Found');
      assert.deepEqual(res.body.messages, ['City not found: Atlantis']);
    });

    it('when the city is longer than 100 characters, answers 400 naming path.city', async () => {
      const res = await get(`/v1/weather-stations/get-districts-of/${'a'.repeat(101)}`);
      assert.equal(res.status, 400);
      assert.match(res.body.messages[0], /^path\.city /);
    });
  });
});
