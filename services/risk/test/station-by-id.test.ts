import assert from 'node:assert/strict';
import request from 'supertest';
import { assertMatchesSchema } from './support/openapi-schema.ts';
import { type RiskTestContext, startRiskTestContext } from './support/risk-test-context.ts';
import { files, stationInFile } from './support/station-files.ts';

describe('GET /v1/weather-stations/by/id/{stationId}', () => {
  let ctx: RiskTestContext;

  before(async () => {
    ctx = await startRiskTestContext('risk_by_id');
  });
  after(async () => {
    await ctx.close();
  });

  const get = (id: string) => request(ctx.url).get(`/v1/weather-stations/by/id/${id}`).set('Authorization', ctx.auth());

  it('when the station exists, answers it as stations.csv has it', async () => {
    const res = await get('17130');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, stationInFile(17130));
    assert.equal(res.body.district, 'Keçiören');
    assertMatchesSchema(res.body, 'Station');
  });

  it('when the source names no district for the station (an airport), answers district ""', async () => {
    const res = await get('17128');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, stationInFile(17128));
    assert.equal(res.body.district, '');
  });

  it('when asked for every station of stations.csv, answers each one as the file has it', async () => {
    // A sample across the file rather than all 1026 requests: every 25th row, plus the last.
    const sample = files.stations.filter((_, i) => i % 25 === 0 || i === files.stations.length - 1);
    for (const row of sample) {
      const res = await get(String(row.station_id));
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, stationInFile(row.station_id));
    }
  });

  it('when no station has the id, answers 404 with messages naming it', async () => {
    const res = await get('99999');
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'Not Found');
    assert.deepEqual(res.body.messages, ['Station not found: 99999']);
    assert.equal(res.body.path, '/v1/weather-stations/by/id/99999');
  });

  for (const id of ['abc', '1.5', '0', '-3', '17128x', '99999999999', 'Infinity', '1e400', '1e4', '0x10', '%2017128', '17128.0', '2147483648']) {
    it(`when the id is "${id}", answers 400 naming path.stationId`, async () => {
      const res = await get(id);
      assert.equal(res.status, 400);
      assert.equal(res.body.status, 400);
      assert.equal(res.body.messages.length, 1);
      assert.match(res.body.messages[0], /^path\.stationId /);
    });
  }

  // Express and the validator route these spellings of the path to the operation too: the check must see them.
  for (const path of ['by/id/1e400/', 'By/id/0x42EA', 'by/ID/1.713e4/', 'by/id/%2B17130/', 'BY/ID/Infinity']) {
    it(`when the path is spelled "${path}" (letter case, a trailing slash), still answers 400 naming path.stationId`, async () => {
      const res = await request(ctx.url).get(`/v1/weather-stations/${path}`).set('Authorization', ctx.auth());
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.messages[0], /^path\.stationId /);
    });
  }

  it('when the path has a trailing slash or another letter case, a well-formed id still finds its station', async () => {
    for (const path of ['by/id/17130/', 'By/Id/17130']) {
      const res = await request(ctx.url).get(`/v1/weather-stations/${path}`).set('Authorization', ctx.auth());
      assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.stationId, 17130);
    }
  });
});
