import assert from 'node:assert/strict';
import { ServerResponse } from 'node:http';
import { HeadResponse, STATION_GENERATION_HEADER, publishStationGeneration } from '@platform/service-kit';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { STATION_GENERATION_KEY } from '@platform/service-kit';
import { type FakeUpstream, type ReceivedRequest, startUpstream } from './support/fake-upstream.ts';
import { type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { type TestSigningKey, signedHeaders } from './support/signing-client.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const BY_ID = '/v1/weather-stations/by/id/17130';
const CITY_DISTRICT = '/v1/weather-stations/by/city-district';

/**
 * A risk stand-in answering as risk does (CONTRACT.md part 17): its answers name the generation they come
 * from, 200s carry a strong ETag and Cache-Control; the body names the generation and the request, so a
 * test sees which answer it got. `status` overrides the status of the next answers, `nextStatus` of the
 * next one only; `delayMs` holds them.
 */
function stationUpstream() {
  const state = { generation: 1, status: 200, delayMs: 0, notFoundBody: undefined as string | undefined, nextStatus: undefined as number | undefined };
  const handler = (req: ReceivedRequest, res: ServerResponse) => {
    const status = state.nextStatus ?? state.status;
    state.nextStatus = undefined;
    const answer = () => {
      const body = JSON.stringify({ generation: state.generation, url: req.url, body: req.body.toString('utf8'), padding: 'x'.repeat(Number(new URL(req.url, 'http://x').searchParams.get('pad') ?? 0)) });
      const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', [STATION_GENERATION_HEADER]: String(state.generation) };
      if (status === 200) Object.assign(headers, { etag: `"${state.generation}-${Buffer.from(req.url).toString('base64url')}"`, 'cache-control': 'private, max-age=60', 'last-modified': new Date(0).toUTCString() });
      if (status >= 400) headers['cache-control'] = 'no-store';
      res.writeHead(status, headers).end(status === 404 ? state.notFoundBody ?? JSON.stringify({ timestamp: new Date(0).toISOString(), status: 404, error: 'Not Found', message: 'no such station', messages: ['no such station'], path: req.url }) : body);
    };
    if (state.delayMs > 0) setTimeout(answer, state.delayMs);
    else answer();
  };
  return { state, handler };
}

/** CONTRACT.md part 17 at the gateway: the station cache sits after every check and never crosses requests. */
describe('gateway station cache (CONTRACT.md part 17)', function () {
  this.timeout(30_000);
  let testRedis: TestRedis;
  let gw: TestGateway;
  let risk: FakeUpstream;
  let upstream: ReturnType<typeof stationUpstream>;

  before(async () => {
    testRedis = await createTestRedis('gw-station-cache');
  });
  after(async () => {
    await testRedis.close();
  });
  beforeEach(async () => {
    upstream = stationUpstream();
    risk = await startUpstream(upstream.handler);
    await testRedis.redis.del(STATION_GENERATION_KEY);
    await publishStationGeneration(testRedis.redis, 1);
    gw = await startGateway({ redis: testRedis.redis, risk, env: { GATEWAY_CACHE_MB: '1' } });
    // The cache reads the generation every 500 ms.
    await sleep(600);
  });
  afterEach(async () => {
    await gw.close();
    await risk.close();
  });

  const get = (target: string, options: { key?: TestSigningKey; bearer?: string | null; headers?: Record<string, string> } = {}) =>
    send(gw.url, 'GET', target, signedHeaders('GET', target, { key: options.key ?? gw.keys.hmac, bearer: options.bearer === null ? undefined : (options.bearer ?? gw.issuer.sign()), headers: options.headers }));
  const post = (body: object, headers: Record<string, string> = {}) => {
    const bytes = Buffer.from(JSON.stringify(body));
    return send(gw.url, 'POST', CITY_DISTRICT, signedHeaders('POST', CITY_DISTRICT, { key: gw.keys.hmac, bearer: gw.issuer.sign(), body: bytes, headers }), bytes);
  };
  const metric = async (name: string) => {
    const text = (await send(gw.managementUrl, 'GET', '/metrics')).body.toString();
    return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1]);
  };

  it('answers a repeated lookup from the cache: MISS then HIT with Age, one upstream request, the same body and validators', async () => {
    const first = await get(BY_ID);
    assert.equal(first.status, 200);
    assert.equal(first.headers['x-cache'], 'MISS');
    await sleep(1100);
    const second = await get(BY_ID);
    assert.equal(second.status, 200);
    assert.equal(second.headers['x-cache'], 'HIT');
    assert.ok(Number(second.headers.age) >= 1, `Age ${String(second.headers.age)}`);
    assert.deepEqual(second.json(), first.json());
    assert.equal(second.headers.etag, first.headers.etag);
    assert.equal(second.headers['cache-control'], 'private, max-age=60');
    assert.equal(second.headers[STATION_GENERATION_HEADER], undefined, 'the generation header stays inside');
    assert.ok(second.headers['x-request-id'] !== first.headers['x-request-id'], 'each answer its own request id');
    assert.equal(risk.received.length, 1);
    assert.equal(await metric('gateway_cache_hits_total'), 1);
    assert.equal(await metric('gateway_cache_misses_total'), 1);
  });

  it('answers a matching If-None-Match with 304 and no body from the cache, and passes a conditional on to risk on a miss', async () => {
    const first = await get(BY_ID, { headers: { 'if-none-match': '"stale"' } });
    assert.equal(first.status, 200);
    assert.equal(risk.received[0]?.headers['if-none-match'], undefined, 'the cache asks risk for the whole answer');
    const etag = String(first.headers.etag);
    const again = await get(BY_ID, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.body.length, 0);
    assert.equal(again.headers.etag, etag);
    assert.equal(again.headers['x-cache'], 'HIT');
    assert.equal(risk.received.length, 1);
    // A miss whose answer matches what the client holds: 304 too.
    const other = await get('/v1/weather-stations/get-cities');
    const revalidated = await get('/v1/weather-stations/get-cities', { headers: { 'if-none-match': String(other.headers.etag) } });
    assert.equal(revalidated.status, 304);
  });

  it('writes a miss\'s and a hit\'s head in one go, CORS headers and quota included: none passes through Node\'s header map (issue 44)', async () => {
    const { setHeader, appendHeader } = ServerResponse.prototype;
    const through: string[] = [];
    // The gateway's responses only (the fake risk and the test's client are Node's messages too).
    ServerResponse.prototype.setHeader = function (this: ServerResponse, name: string, value: number | string | readonly string[]) {
      if (this instanceof HeadResponse && this.req.url?.startsWith('/v1/') === true) through.push(name);
      return setHeader.call(this, name, value);
    };
    ServerResponse.prototype.appendHeader = function (this: ServerResponse, name: string, value: string | readonly string[]) {
      if (this instanceof HeadResponse && this.req.url?.startsWith('/v1/') === true) through.push(name);
      return appendHeader.call(this, name, value);
    };
    try {
      const origin = { origin: 'http://localhost:3000' };
      const miss = await get(BY_ID, { headers: origin });
      const hit = await get(BY_ID, { headers: origin });
      assert.deepEqual([miss.headers['x-cache'], hit.headers['x-cache']], ['MISS', 'HIT']);
      for (const answer of [miss, hit]) {
        assert.equal(answer.status, 200);
        assert.equal(answer.headers['access-control-allow-origin'], 'http://localhost:3000');
        assert.equal(answer.headers.vary, 'Origin');
        assert.match(String(answer.headers.ratelimit), /r=\d+/);
        assert.match(String(answer.headers['x-request-id']), /^[0-9a-f-]{36}$/);
        assert.equal(answer.headers['x-frame-options'], 'DENY');
        assert.equal(answer.headers['cache-control'], 'private, max-age=60');
      }
      assert.deepEqual(through, []);
      // An error's answer goes through the map as before, and still carries what was kept.
      const refused = await get(BY_ID, { headers: origin, bearer: null });
      assert.equal(refused.status, 401);
      assert.equal(refused.headers['x-frame-options'], 'DENY');
      assert.equal(refused.headers['access-control-allow-origin'], 'http://localhost:3000');
      assert.ok(through.length > 0);
    } finally {
      ServerResponse.prototype.setHeader = setHeader;
      ServerResponse.prototype.appendHeader = appendHeader;
    }
  });

  it('checks every request before the cache: no token, a bad signature, a replayed nonce and a spent rate limit are refused on a cached key', async () => {
    assert.equal((await get(BY_ID)).status, 200);
    assert.equal((await get(BY_ID, { bearer: null })).status, 401);
    assert.equal((await get(BY_ID, { bearer: 'not.a.jwt' })).status, 401);
    const signed = signedHeaders('GET', BY_ID, { key: gw.keys.hmac, bearer: gw.issuer.sign() });
    assert.equal((await send(gw.url, 'GET', BY_ID, signed)).headers['x-cache'], 'HIT');
    const replay = await send(gw.url, 'GET', BY_ID, signed);
    assert.equal(replay.status, 409, 'the hit spent its nonce');
    assert.equal(replay.headers['x-cache'], undefined);
    const tampered = { ...signedHeaders('GET', BY_ID, { key: gw.keys.hmac, bearer: gw.issuer.sign() }), signature: 'sig1=:AAAA:' };
    assert.equal((await send(gw.url, 'GET', BY_ID, tampered)).status, 401);
    assert.equal(risk.received.length, 1);
  });

  it('spends the client key\'s rate limit on a hit: past it, 429 from a cached key', async () => {
    await gw.close();
    gw = await startGateway({ redis: testRedis.redis, risk, env: { GATEWAY_CACHE_MB: '1', GATEWAY_RATE_LIMITS: JSON.stringify({ 'test-hmac': { limit: 3, windowS: 60 }, '*': { limit: 1000, windowS: 1 } }) } });
    await sleep(600);
    const statuses = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await get(BY_ID)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
  });

  it('makes one upstream request for concurrent misses of one key, and keeps different requests apart under two client keys', async () => {
    upstream.state.delayMs = 150;
    const same = await Promise.all(Array.from({ length: 8 }, () => get(BY_ID)));
    assert.ok(same.every((r) => r.status === 200 && r.headers['x-cache'] === 'MISS'));
    assert.equal(risk.received.length, 1);
    const targets = Array.from({ length: 12 }, (_, i) => `/v1/weather-stations/nearest?latitude=39.${i}&longitude=32.8&limit=${(i % 3) + 1}`);
    const answers = await Promise.all(targets.map((target, i) => get(target, { key: i % 2 === 0 ? gw.keys.hmac : gw.keys.ed25519 })));
    answers.forEach((answer, i) => {
      assert.equal(answer.status, 200);
      assert.equal(answer.json().url, targets[i], 'each request its own answer');
    });
    // The query is normalised: the same parameters in another order are the same entry.
    const reordered = await get('/v1/weather-stations/nearest?limit=1&longitude=32.8&latitude=39.0');
    assert.equal(reordered.headers['x-cache'], 'HIT');
    assert.equal(reordered.json().url, targets[0]);
  });

  it('keys a POST lookup by its body: two districts, two answers, then a hit for each', async () => {
    const a = await post({ city: 'Ankara', district: 'Keçiören' });
    const b = await post({ city: 'Ankara', district: 'Çankaya' });
    assert.notDeepEqual(a.json().body, b.json().body);
    const again = await post({ city: 'Ankara', district: 'Çankaya' });
    assert.equal(again.headers['x-cache'], 'HIT');
    assert.deepEqual(again.json(), b.json());
    // A POST that carries If-None-Match goes to risk as it is (risk answers its 412).
    await post({ city: 'Ankara', district: 'Çankaya' }, { 'if-none-match': String(b.headers.etag) });
    assert.equal(risk.received.at(-1)?.headers['if-none-match'], b.headers.etag);
  });

  it('keys by the target in RFC 3986 normal form: an encoded & or = or % is another request, an encoded digit or reordered names the same', async () => {
    const NEAREST = '/v1/weather-stations/nearest';
    const districts = '/v1/weather-stations/get-districts-of';
    const pairs: Array<[string, string, 'HIT' | 'MISS']> = [
      [`${NEAREST}?latitude=37.5&longitude=30.5`, `${NEAREST}?latitude=37.5%26longitude%3D30.5`, 'MISS'],
      [`${districts}/%25ZY`, `${districts}/%ZY`, 'MISS'],
      [`${districts}/%C4%B0zmir`, `${districts}/%c4%b0zmir`, 'HIT'],
      ['/v1/weather-stations/by/id/17130', '/v1/weather-stations/by/id/%31%37%31%33%30', 'HIT'],
      [`${NEAREST}?latitude=38&longitude=27&limit=2`, `${NEAREST}?limit=2&longitude=27&latitude=38`, 'HIT'],
    ];
    for (const [first, second, expected] of pairs) {
      assert.equal((await get(first)).headers['x-cache'], 'MISS', first);
      const again = await get(second);
      assert.equal(again.headers['x-cache'], expected, `${second} after ${first}`);
      // What the client gets is the answer to its own request: on a miss, risk saw that very target.
      if (expected === 'MISS') assert.equal(again.json().url, second);
    }
  });

  it('keys a body by its media type too: the same bytes in another charset are another request, the same type spelled otherwise the same', async () => {
    const bytes = Buffer.from(JSON.stringify({ city: 'İstanbul', district: 'Kadıköy' }));
    const postAs = (type: string) =>
      send(gw.url, 'POST', CITY_DISTRICT, signedHeaders('POST', CITY_DISTRICT, { key: gw.keys.hmac, bearer: gw.issuer.sign(), body: bytes, headers: { 'content-type': type } }), bytes);
    // The bytes read as UTF-7 name another city: that answer must not be the UTF-8 request's.
    upstream.state.nextStatus = 404;
    const odd = await postAs('application/json; charset=utf-7');
    assert.equal(odd.status, 404);
    const plain = await postAs('application/json');
    assert.equal(plain.status, 200);
    assert.equal(plain.headers['x-cache'], 'MISS');
    assert.equal((await postAs('application/json; charset=utf-7')).headers['x-cache'], 'HIT');
    for (const type of ['text/plain', 'application/json; charset=utf-16le']) {
      const other = await postAs(type);
      assert.equal(other.headers['x-cache'], 'MISS', type);
    }
    // Case and spaces do not change a media type or its charset.
    assert.equal((await postAs('Application/JSON')).headers['x-cache'], 'HIT');
    assert.equal((await postAs('application/json;charset=UTF-8')).headers['x-cache'], 'MISS');
    assert.equal((await postAs('application/json; charset=utf-8')).headers['x-cache'], 'HIT');
    assert.deepEqual(
      risk.received.map((r) => r.headers['content-type']),
      ['application/json; charset=utf-7', 'application/json', 'text/plain', 'application/json; charset=utf-16le', 'application/json;charset=UTF-8'],
    );
  });

  it('sends a query of more than 64 pairs upstream as it is: a parser reading the first 1000 would see another request than a key of its sorted pairs', async () => {
    const NEAREST = '/v1/weather-stations/nearest?latitude=40.5&longitude=30';
    assert.equal((await get(`${NEAREST}&limit=1`)).headers['x-cache'], 'MISS');
    const padded = `${NEAREST}${'&'.repeat(1000)}&limit=1`;
    for (let i = 0; i < 2; i += 1) {
      const answer = await get(padded);
      assert.equal(answer.headers['x-cache'], 'MISS');
      assert.equal(answer.json().url, padded, 'risk saw the request as sent');
    }
    // A few empty pairs are nothing to any parser: the same entry.
    assert.equal((await get(`${NEAREST}&&limit=1&`)).headers['x-cache'], 'HIT');
    assert.equal(risk.received.length, 3);
  });

  it('hands a waiting request only what was stored: after an error, each waiting request asks upstream itself', async () => {
    upstream.state.delayMs = 150;
    upstream.state.nextStatus = 503;
    const answers = await Promise.all(Array.from({ length: 4 }, () => get(BY_ID)));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 503]);
    assert.ok(answers.every((a) => a.headers['x-cache'] === 'MISS'));
    assert.equal(risk.received.length, 4);
  });

  describe('a miss whose leading request gets no answer (UPSTREAM_TIMEOUT_MS 600)', () => {
    let local: TestGateway;
    beforeEach(async () => {
      local = await startGateway({ redis: testRedis.redis, risk, env: { GATEWAY_CACHE_MB: '1', UPSTREAM_TIMEOUT_MS: '600' } });
      await sleep(600);
    });
    afterEach(async () => {
      await local.close();
    });
    const call = async () => {
      const started = performance.now();
      const res = await send(local.url, 'GET', BY_ID, signedHeaders('GET', BY_ID, { key: local.keys.hmac, bearer: local.issuer.sign() }));
      return Object.assign(res, { ms: performance.now() - started });
    };

    it('never hands the requests that joined it the leading request\'s timeout: they wait for the key\'s next upstream request, one for all', async () => {
      upstream.state.delayMs = 2000;
      const leading = call();
      await sleep(450);
      // Risk answers at once from now on; these join the leading request's flight 150 ms before its timeout.
      upstream.state.delayMs = 0;
      const joined = Array.from({ length: 5 }, () => call());
      const [first, ...late] = await Promise.all([leading, ...joined]);
      assert.equal(first.status, 504);
      for (const answer of late) {
        assert.equal(answer.status, 200, answer.body.toString());
        assert.equal(answer.headers['x-cache'], 'MISS');
      }
      assert.equal(risk.received.length, 2, 'one upstream request for the five that waited');
      assert.equal((await call()).headers['x-cache'], 'HIT', 'the answer of the key\'s next upstream request was not stored');
    });

    it('ends a waiting request\'s wait UPSTREAM_TIMEOUT_MS after it began, not when the request it joined gives up, nor a whole timeout later', async () => {
      upstream.state.delayMs = 5000;
      const leading = call();
      await sleep(300);
      const [first, late] = await Promise.all([leading, call()]);
      assert.equal(first.status, 504);
      assert.equal(late.status, 504, late.body.toString());
      assert.equal(late.json().message, 'Upstream service timed out');
      assert.ok(late.ms > 500 && late.ms < 800, `the request that joined waited ${Math.round(late.ms)} ms`);
    });
  });

  it('hands waiting requests an answer too big to keep: one upstream request, every request its answer, nothing stored', async () => {
    upstream.state.delayMs = 150;
    // GATEWAY_CACHE_MB 1: no entry over 64 kB.
    const big = '/v1/weather-stations/nearest?latitude=39&longitude=32&pad=70000';
    const answers = await Promise.all(Array.from({ length: 4 }, () => get(big)));
    assert.equal(risk.received.length, 1);
    for (const answer of answers) {
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['x-cache'], 'MISS');
      assert.equal(answer.json().url, big);
    }
    assert.equal((await get(big)).headers['x-cache'], 'MISS', 'not kept');
    assert.equal(risk.received.length, 2);
  });

  it('gives a request that waited for another\'s 404 its own path and time', async () => {
    upstream.state.status = 404;
    upstream.state.delayMs = 150;
    const targets = ['/v1/weather-stations/by/id/99', '/v1/weather-stations/by/id/%39%39', '/v1/weather-stations/by/id/9%39'];
    const answers = await Promise.all(targets.map((target) => get(target)));
    assert.equal(risk.received.length, 1, 'one upstream request for the one key');
    answers.forEach((answer, i) => {
      assert.equal(answer.status, 404);
      assert.equal(answer.headers['x-cache'], 'MISS');
      assert.equal(answer.json().path, targets[i]);
    });
    // The one that went upstream relays risk's answer (the stand-in's time); the others get their own.
    assert.equal(answers.filter((answer) => answer.json().timestamp === new Date(0).toISOString()).length, 1);
  });

  it('answers If-Modified-Since as risk does, on a hit and on a miss: 304 when the data is no newer, If-None-Match first', async () => {
    const lastModified = new Date(0).toUTCString();
    const later = new Date(5000).toUTCString();
    const earlier = new Date(-5000).toUTCString();
    const miss = await get(BY_ID, { headers: { 'if-modified-since': later } });
    assert.equal(miss.status, 304);
    assert.equal(miss.headers['x-cache'], 'MISS');
    assert.equal(miss.headers['last-modified'], lastModified);
    assert.equal(risk.received[0]?.headers['if-modified-since'], undefined, 'the cache asks risk for the whole answer');
    const hit = await get(BY_ID, { headers: { 'if-modified-since': lastModified } });
    assert.equal(hit.status, 304);
    assert.equal(hit.headers['x-cache'], 'HIT');
    assert.equal(hit.body.length, 0);
    assert.equal((await get(BY_ID, { headers: { 'if-modified-since': earlier } })).status, 200);
    assert.equal((await get(BY_ID, { headers: { 'if-modified-since': 'not a date' } })).status, 200);
    // If-None-Match decides when both are sent.
    assert.equal((await get(BY_ID, { headers: { 'if-modified-since': later, 'if-none-match': '"other"' } })).status, 200);
    assert.equal(risk.received.length, 1);
  });

  it('says MISS on the gateway\'s own answer to a miss whose upstream is gone (502)', async () => {
    await risk.close();
    const answer = await get(BY_ID);
    assert.equal(answer.status, 502);
    assert.equal(answer.headers['x-cache'], 'MISS');
  });

  it('stores a 404, with this request\'s time on each hit, and never a 5xx', async () => {
    upstream.state.status = 404;
    const missing = await get('/v1/weather-stations/by/id/1');
    assert.equal(missing.status, 404);
    await sleep(20);
    const again = await get('/v1/weather-stations/by/id/1');
    assert.equal(again.status, 404);
    assert.equal(again.headers['x-cache'], 'HIT');
    assert.equal(again.json().path, '/v1/weather-stations/by/id/1');
    assert.notEqual(again.json().timestamp, new Date(0).toISOString());
    // The same key spelled with an empty query pair: its own target, query and all, as risk gives it.
    const spelled = await get('/v1/weather-stations/by/id/1?&');
    assert.equal(spelled.headers['x-cache'], 'HIT');
    assert.equal(spelled.json().path, '/v1/weather-stations/by/id/1?&');
    upstream.state.status = 503;
    for (let i = 0; i < 2; i += 1) {
      const failed = await get('/v1/weather-stations/by/id/2');
      assert.equal(failed.status, 503);
      assert.equal(failed.headers['x-cache'], 'MISS');
    }
    assert.equal(risk.received.length, 3);
  });

  it('answers a 404 whose body is not the error shape as it came, and does not store it (a hit could not give it its time and path)', async () => {
    upstream.state.status = 404;
    for (const [i, body] of ['not json', '{"weird":true}', '[1,2]'].entries()) {
      upstream.state.notFoundBody = body;
      for (let n = 0; n < 2; n += 1) {
        const missing = await get(`/v1/weather-stations/by/id/${3 + i}`);
        assert.equal(missing.status, 404);
        assert.equal(missing.headers['x-cache'], 'MISS', body);
        assert.equal(missing.body.toString(), body);
      }
    }
    assert.equal(risk.received.length, 6);
  });

  it('drops the old generation\'s answers within 2 s of risk writing the new one', async () => {
    assert.equal((await get(BY_ID)).json().generation, 1);
    assert.equal((await get(BY_ID)).headers['x-cache'], 'HIT');
    upstream.state.generation = 2;
    await publishStationGeneration(testRedis.redis, 2);
    const published = Date.now();
    let answer = await get(BY_ID);
    while (answer.json().generation !== 2 && Date.now() - published < 3000) {
      await sleep(50);
      answer = await get(BY_ID);
    }
    assert.equal(answer.json().generation, 2);
    assert.ok(Date.now() - published < 2000, `the old answer was served ${Date.now() - published} ms after the new generation`);
  });

  it('serves nothing from the cache while Redis holds no generation (a flush), and goes upstream instead', async () => {
    assert.equal((await get(BY_ID)).status, 200);
    await testRedis.redis.del(STATION_GENERATION_KEY);
    await sleep(700);
    const answer = await get(BY_ID);
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['x-cache'], 'MISS');
    assert.equal(risk.received.length, 2);
  });

  it('never holds more than GATEWAY_CACHE_MB: older entries are evicted', async () => {
    // 1 MB: 40 answers of ~40 kB each are 1.6 MB.
    for (let i = 0; i < 40; i += 1) assert.equal((await get(`/v1/weather-stations/nearest?latitude=39&longitude=32&limit=${(i % 10) + 1}&pad=${40_000 + i}`)).status, 200);
    assert.ok((await metric('gateway_cache_bytes')) <= 1024 * 1024);
    assert.ok((await metric('gateway_cache_evictions_total')) > 0);
  });
});

describe('gateway station cache off (GATEWAY_CACHE_MB=0)', () => {
  let testRedis: TestRedis;

  before(async () => {
    testRedis = await createTestRedis('gw-station-cache-off');
  });
  after(async () => {
    await testRedis.close();
  });

  it('sends every lookup upstream with its conditional headers and adds no X-Cache', async () => {
    const upstream = stationUpstream();
    const risk = await startUpstream(upstream.handler);
    await publishStationGeneration(testRedis.redis, 1);
    const gw = await startGateway({ redis: testRedis.redis, risk, env: { GATEWAY_CACHE_MB: '0' } });
    try {
      for (let i = 0; i < 2; i += 1) {
        const answer = await send(gw.url, 'GET', BY_ID, signedHeaders('GET', BY_ID, { key: gw.keys.hmac, bearer: gw.issuer.sign(), headers: { 'if-none-match': '"a"', 'if-modified-since': new Date(0).toUTCString() } }));
        assert.equal(answer.status, 200);
        assert.equal(answer.headers['x-cache'], undefined);
      }
      assert.equal(risk.received.length, 2);
      assert.equal(risk.received[1]?.headers['if-none-match'], '"a"');
      assert.equal(risk.received[1]?.headers['if-modified-since'], new Date(0).toUTCString());
    } finally {
      await gw.close();
      await risk.close();
    }
  });
});
