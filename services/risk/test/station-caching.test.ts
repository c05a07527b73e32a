import assert from 'node:assert/strict';
import CachePolicy from 'http-cache-semantics';
import request from 'supertest';
import { type RiskTestContext, startRiskTestContext } from './support/risk-test-context.ts';

/** CONTRACT.md part 17, at risk: validators, Cache-Control and conditional requests on every station operation. */
describe('station answers are cacheable (CONTRACT.md part 17, risk)', () => {
  let ctx: RiskTestContext;

  before(async () => {
    ctx = await startRiskTestContext('risk_caching');
  });
  after(async () => {
    await ctx.close();
  });

  const token = () => ctx.auth();
  const GETS = [
    '/v1/weather-stations/by/id/17130',
    '/v1/weather-stations/get-cities',
    '/v1/weather-stations/get-districts-of/Ankara',
    '/v1/weather-stations/nearest?latitude=39.97&longitude=32.86&limit=3',
  ];
  const CITY_DISTRICT = '/v1/weather-stations/by/city-district';

  it('answers every successful operation with a strong ETag, Last-Modified and Cache-Control: private, max-age=60', async () => {
    const answers = [...(await Promise.all(GETS.map((path) => request(ctx.url).get(path).set('Authorization', token())))), await request(ctx.url).post(CITY_DISTRICT).set('Authorization', token()).send({ city: 'Ankara', district: 'Keçiören' })];
    const etags = new Set<string>();
    for (const res of answers) {
      assert.equal(res.status, 200);
      assert.match(String(res.headers.etag), /^"[^"]+"$/, 'a strong ETag');
      etags.add(String(res.headers.etag));
      assert.equal(res.headers['cache-control'], 'private, max-age=60');
      assert.ok(!Number.isNaN(Date.parse(String(res.headers['last-modified']))));
    }
    assert.equal(etags.size, answers.length, 'each request its own ETag');
  });

  it('writes the validators in one head with the request id, the security headers, the type and the exact length', async () => {
    for (const path of GETS) {
      const res = await request(ctx.url).get(path).set('Authorization', token());
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.text), path);
      assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
      assert.equal(res.headers['x-frame-options'], 'DENY');
      // The answer's own Cache-Control, not the envelope's no-store.
      assert.equal(res.headers['cache-control'], 'private, max-age=60');
    }
  });

  it('gives the same ETag for the same request with another token, and none to an error', async () => {
    const [a, b] = await Promise.all([0, 1].map(() => request(ctx.url).get(GETS[0] as string).set('Authorization', token())));
    assert.equal(a?.headers.etag, b?.headers.etag);
    const missing = await request(ctx.url).get('/v1/weather-stations/by/id/1').set('Authorization', token());
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.etag, undefined);
    assert.equal(missing.headers['cache-control'], 'no-store');
  });

  it('answers 304 with no body to a matching If-None-Match (also in a list, weakly compared, or *), 200 to another', async () => {
    for (const path of GETS) {
      const first = await request(ctx.url).get(path).set('Authorization', token());
      const etag = String(first.headers.etag);
      for (const header of [etag, `"other", ${etag}`, `W/${etag}`, '*']) {
        const again = await request(ctx.url).get(path).set('Authorization', token()).set('If-None-Match', header);
        assert.equal(again.status, 304, `${path} with If-None-Match ${header}`);
        assert.equal(again.text, '');
        assert.equal(again.headers.etag, etag);
        assert.equal(again.headers['cache-control'], 'private, max-age=60');
      }
      const other = await request(ctx.url).get(path).set('Authorization', token()).set('If-None-Match', '"other"');
      assert.equal(other.status, 200);
      assert.deepEqual(other.body, first.body);
    }
  });

  it('answers If-Modified-Since by the data\'s change time, and lets If-None-Match win over it', async () => {
    const first = await request(ctx.url).get(GETS[0] as string).set('Authorization', token());
    const lastModified = String(first.headers['last-modified']);
    const since = (await request(ctx.url).get(GETS[0] as string).set('Authorization', token()).set('If-Modified-Since', lastModified)).status;
    assert.equal(since, 304);
    const before = new Date(Date.parse(lastModified) - 1000).toUTCString();
    assert.equal((await request(ctx.url).get(GETS[0] as string).set('Authorization', token()).set('If-Modified-Since', before)).status, 200);
    assert.equal((await request(ctx.url).get(GETS[0] as string).set('Authorization', token()).set('If-Modified-Since', 'not a date')).status, 200);
    // If-None-Match that does not match wins over an If-Modified-Since that would have matched.
    const wins = await request(ctx.url).get(GETS[0] as string).set('Authorization', token()).set('If-None-Match', '"other"').set('If-Modified-Since', lastModified);
    assert.equal(wins.status, 200);
  });

  it('answers the POST lookup\'s matching If-None-Match with 412 in the error shape, never 304, and ignores If-Modified-Since there', async () => {
    const send = (headers: Record<string, string>) => request(ctx.url).post(CITY_DISTRICT).set('Authorization', token()).set(headers).send({ city: 'Ankara', district: 'Keçiören' });
    const first = await send({});
    const matched = await send({ 'If-None-Match': String(first.headers.etag) });
    assert.equal(matched.status, 412);
    assert.equal(matched.body.status, 412);
    // An error is not the answer the validators describe: none of them, and not stored.
    assert.equal(matched.headers.etag, undefined);
    assert.equal(matched.headers['cache-control'], 'no-store');
    assert.ok(Array.isArray(matched.body.messages));
    assert.equal((await send({ 'If-Modified-Since': String(first.headers['last-modified']) })).status, 200);
  });

  it('still refuses a request without a valid token, whatever its If-None-Match', async () => {
    const first = await request(ctx.url).get(GETS[0] as string).set('Authorization', token());
    const res = await request(ctx.url).get(GETS[0] as string).set('If-None-Match', String(first.headers.etag));
    assert.equal(res.status, 401);
  });

  it('is storable and fresh for a private cache by RFC 9111 (http-cache-semantics), not for a shared one', async () => {
    const authorization = token();
    const res = await request(ctx.url).get(GETS[0] as string).set('Authorization', authorization);
    const req = { url: GETS[0] as string, method: 'GET', headers: { authorization } };
    const response = { status: res.status, headers: res.headers as Record<string, string> };
    const privateCache = new CachePolicy(req, response, { shared: false });
    assert.ok(privateCache.storable());
    assert.ok(privateCache.timeToLive() > 55_000 && privateCache.timeToLive() <= 60_000);
    assert.equal(new CachePolicy(req, response, { shared: true }).storable(), false);
    // Revalidation: the oracle's conditional headers get a 304 that it reads as "not modified".
    const revalidation = privateCache.revalidationHeaders({ ...req, headers: { authorization } });
    const notModified = await request(ctx.url).get(GETS[0] as string).set(revalidation as Record<string, string>);
    assert.equal(notModified.status, 304);
    const { modified } = privateCache.revalidatedPolicy(req, { status: notModified.status, headers: notModified.headers as Record<string, string> });
    assert.equal(modified, false);
  });
});
