import assert from 'node:assert/strict';
import { closeRedis } from '@platform/service-kit';
import { type TestRedis, createTestRedis, flushKeys, unreachableRedis } from '@platform/service-kit/testing';
import { idempotencyRedisKey, nonceKey, rateKey } from '../src/admission/admission.ts';
import { type Answer, type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { newIdempotencyKey, newNonce, signedHeaders } from './support/signing-client.ts';

const CITIES = '/v1/weather-stations/get-cities';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `"name";r=3;t=60` → { r: 3, t: 60 } */
function quotaOf(res: Answer): { policy: string; r: number; t: number } {
  const match = /^"([^"]+)";r=(\d+);t=(\d+)$/.exec(String(res.headers.ratelimit));
  assert.ok(match, `RateLimit: ${String(res.headers.ratelimit)}`);
  return { policy: match[1]!, r: Number(match[2]), t: Number(match[3]) };
}

describe('gateway rate limits per client key (CONTRACT.md part 12)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;

  before(async () => {
    testRedis = await createTestRedis('gw-rate');
    gw = await startGateway({
      redis: testRedis.redis,
      env: { GATEWAY_RATE_LIMITS: JSON.stringify({ 'test-hmac': { limit: 5, windowS: 60 }, '*': { limit: 1000, windowS: 1 } }) },
    });
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });
  // Every test starts with fresh quotas: the counters are the only state they share.
  beforeEach(async () => {
    await flushKeys(testRedis.redis, `${testRedis.keyPrefix}gateway:{ck:*}:rate:`);
  });

  const token = () => gw.issuer.sign();
  const cities = (headers: Record<string, string> = {}) => send(gw.url, 'GET', CITIES, { ...signedHeaders('GET', CITIES, { key: gw.keys.hmac, bearer: token() }), ...headers });

  it('admits the limit with the key\'s RateLimit-Policy and a falling RateLimit, then answers 429 Rate limit exceeded with Retry-After', async () => {
    const before = gw.risk.received.length;
    const answers: Answer[] = [];
    for (let i = 0; i < 7; i += 1) answers.push(await cities());
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 429, 429]);
    for (const res of answers) assert.equal(res.headers['ratelimit-policy'], '"test-hmac";q=5;w=60');
    assert.deepEqual(answers.map((a) => quotaOf(a).r), [4, 3, 2, 1, 0, 0, 0]);
    const refused = answers[5]!;
    assert.deepEqual(refused.json(), { timestamp: refused.json().timestamp, status: 429, error: 'Too Many Requests', message: 'Rate limit exceeded', messages: ['Rate limit exceeded'], path: CITIES });
    const retryAfter = Number(refused.headers['retry-after']);
    // The burst's sub-window leaves the 60 s window within 60–66 s.
    assert.ok(retryAfter >= 59 && retryAfter <= 66, `Retry-After ${retryAfter}`);
    assert.equal(quotaOf(refused).t, retryAfter);
    assert.equal(gw.risk.received.length, before + 5, 'a refused request was proxied');
  });

  it('when refused, spends neither the nonce nor the idempotency key: the same request is admitted once the window has room', async () => {
    for (let i = 0; i < 5; i += 1) assert.equal((await cities()).status, 200);
    const nonce = newNonce();
    const idempotencyKey = newIdempotencyKey();
    const headers = signedHeaders('GET', CITIES, { key: gw.keys.hmac, bearer: token(), nonce, idempotencyKey });
    assert.equal((await send(gw.url, 'GET', CITIES, headers)).status, 429);
    assert.equal(await testRedis.redis.exists(nonceKey(gw.keys.hmac.keyId, nonce)), 0);
    assert.equal(await testRedis.redis.exists(idempotencyRedisKey(gw.keys.hmac.keyId, idempotencyKey)), 0);
    // Room again (the counters emptied as a window passing would): the very same signed request goes through.
    await flushKeys(testRedis.redis, `${testRedis.keyPrefix}gateway:{ck:*}:rate:`);
    assert.equal((await send(gw.url, 'GET', CITIES, headers)).status, 200);
  });

  it('comes after the signature: unsigned and badly signed requests spend nobody\'s quota and carry no RateLimit fields', async () => {
    for (let i = 0; i < 20; i += 1) {
      const forged = signedHeaders('GET', CITIES, { key: gw.keys.hmac, bearer: token(), signWith: { keyId: 'test-hmac', alg: 'hmac-sha256', secret: 'not-the-secret-0123456789' } });
      const res = await send(gw.url, 'GET', CITIES, i % 2 === 0 ? forged : { 'x-idempotency-key': newIdempotencyKey() });
      assert.equal(res.status, 401);
      assert.equal(res.headers['ratelimit-policy'], undefined);
      assert.equal(res.headers.ratelimit, undefined);
    }
    assert.equal(quotaOf(await cities()).r, 4);
  });

  it('comes before the bearer token: over the limit, a fresh request with a bad token is 429, not 401', async () => {
    for (let i = 0; i < 5; i += 1) assert.equal((await cities()).status, 200);
    assert.equal((await send(gw.url, 'GET', CITIES, signedHeaders('GET', CITIES, { key: gw.keys.hmac, bearer: 'not-a-token' }))).status, 429);
  });

  it('comes after the replay check: a reused nonce is 409 and counts for nothing, below the limit and over it', async () => {
    const replay = signedHeaders('GET', CITIES, { key: gw.keys.hmac, bearer: token() });
    assert.equal(quotaOf(await send(gw.url, 'GET', CITIES, replay)).r, 4);
    for (let i = 0; i < 10; i += 1) {
      const again = await send(gw.url, 'GET', CITIES, replay);
      assert.deepEqual([again.status, again.json().message, quotaOf(again).r], [409, 'Replay attack detected (nonce reused)', 4]);
    }
    for (let i = 0; i < 4; i += 1) assert.equal((await cities()).status, 200);
    const over = await send(gw.url, 'GET', CITIES, replay);
    assert.deepEqual([over.status, quotaOf(over).r], [409, 0]);
    // The refused fresh request's wait, not the window's: the replay's answer says when room comes.
    assert.ok(quotaOf(over).t >= 59, `t=${quotaOf(over).t}`);
    assert.equal((await cities()).status, 429);
  });

  it('counts each key on its own: another key keeps its own policy ("*") and quota', async () => {
    for (let i = 0; i < 6; i += 1) await cities();
    const other = await send(gw.url, 'GET', CITIES, signedHeaders('GET', CITIES, { key: gw.keys.ed25519, bearer: token() }));
    assert.equal(other.status, 200);
    assert.equal(other.headers['ratelimit-policy'], '"default";q=1000;w=1');
    assert.equal(quotaOf(other).r, 999);
  });

  it('puts the quota on every answer after the signature: 409 for a reused nonce, 401 for a bad token, the upstream\'s own answers', async () => {
    const replay = signedHeaders('GET', CITIES, { key: gw.keys.hmac, bearer: token() });
    const first = await send(gw.url, 'GET', CITIES, replay);
    const again = await send(gw.url, 'GET', CITIES, replay);
    const badToken = await send(gw.url, 'GET', CITIES, signedHeaders('GET', CITIES, { key: gw.keys.hmac, bearer: 'not-a-token' }));
    assert.deepEqual([first.status, again.status, badToken.status], [200, 409, 401]);
    // The replay is not counted (it spends nobody's quota); the bad token's fresh request is.
    assert.deepEqual([first, again, badToken].map((a) => quotaOf(a).r), [4, 4, 3]);
  });

  it('when 40 requests of one key race on as many connections, exactly the limit is admitted', async () => {
    const answers = await Promise.all(Array.from({ length: 40 }, () => cities()));
    assert.equal(answers.filter((a) => a.status === 200).length, 5);
    assert.equal(answers.filter((a) => a.status === 429).length, 35);
  });

  it('when Redis is unreachable, answers 503 with no quota left (r=0), as it admits nothing', async () => {
    const redis = unreachableRedis();
    const down = await startGateway({ redis, keepMirror: true });
    try {
      const res = await send(down.url, 'GET', CITIES, signedHeaders('GET', CITIES, { key: down.keys.hmac, bearer: down.issuer.sign() }));
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '1', 'a 503 a retry may cure says when (CONTRACT.md part 13)');
      assert.equal(res.headers['ratelimit-policy'], '"default";q=10000;w=1');
      assert.equal(res.headers.ratelimit, '"default";r=0;t=1');
      // The gateway's own 503 on a station path carries `messages` too (CONTRACT.md part 7).
      const message = 'Service temporarily unavailable';
      assert.deepEqual(res.json(), { timestamp: res.json().timestamp, status: 503, error: 'Service Unavailable', message, messages: [message], path: CITIES });
    } finally {
      await down.close();
      await closeRedis(redis);
    }
  });
});

describe('gateway rate limits: a sliding window, not a fixed one', function () {
  // Timed by necessity (a window must pass); every step has seconds of slack on a loaded machine.
  this.timeout(30_000);
  let testRedis: TestRedis;
  let gw: TestGateway;

  before(async () => {
    testRedis = await createTestRedis('gw-rate-window');
    gw = await startGateway({ redis: testRedis.redis, env: { GATEWAY_RATE_LIMITS: JSON.stringify({ '*': { limit: 10, windowS: 6 }, 'test-ed25519': { limit: 1000, windowS: 1 } }) } });
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  const batch = async (n: number) => {
    const target = CITIES;
    const answers = await Promise.all(Array.from({ length: n }, () => send(gw.url, 'GET', target, signedHeaders('GET', target, { key: gw.keys.hmac, bearer: gw.issuer.sign() }))));
    return { admitted: answers.filter((a) => a.status === 200).length, answers };
  };

  it('keeps no more than the window\'s sub-windows in Redis, however long a key keeps asking', async () => {
    // A key of its own policy: 100 ms sub-windows, 25 of them passing while it asks.
    const target = CITIES;
    for (let i = 0; i < 25; i += 1) {
      const res = await send(gw.url, 'GET', target, signedHeaders('GET', target, { key: gw.keys.ed25519, bearer: gw.issuer.sign() }));
      assert.equal(res.status, 200);
      await sleep(100);
    }
    const key = rateKey('test-ed25519', 1);
    assert.equal(await testRedis.redis.exists(key), 1);
    const fields = await testRedis.redis.hlen(key);
    assert.ok(fields >= 5 && fields <= 11, `${fields} sub-windows kept`);
    assert.ok((await testRedis.redis.pttl(key)) <= 1100);
  });

  it('admits a request when the oldest requests leave the last 6 s, never the limit again at once (a fixed window would admit 2× at its edge)', async () => {
    const started = Date.now();
    assert.equal((await batch(5)).admitted, 5);
    await sleep(3000);
    const second = await batch(10);
    assert.equal(second.admitted, 5, 'the first 5 still count');
    const refused = second.answers.find((a) => a.status === 429)!;
    // Retry-After: when the first batch leaves the window (6–6.6 s after it), not when the second does (9 s).
    const retryAfter = Number(refused.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 4, `Retry-After ${retryAfter}`);
    await sleep(Math.max(0, started + 6700 - Date.now()));
    const third = await batch(10);
    assert.ok(Date.now() - started < 9000, 'too slow a machine: the second batch may have left the window too');
    assert.equal(third.admitted, 5, 'only the first batch has left the window');
  });
});
