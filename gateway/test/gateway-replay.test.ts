import assert from 'node:assert/strict';
import { closeRedis } from '@platform/service-kit';
import { type TestRedis, createTestRedis, unreachableRedis } from '@platform/service-kit/testing';
import { idempotencyRedisKey, nonceKey } from '../src/admission/admission.ts';
import { startUpstream } from './support/fake-upstream.ts';
import { type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { newIdempotencyKey, newNonce, signedHeaders } from './support/signing-client.ts';

describe('gateway nonces and idempotency keys (CONTRACT.md part 3)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;

  before(async () => {
    testRedis = await createTestRedis('gw-replay');
    gw = await startGateway({ redis: testRedis.redis });
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  const login = '/v1/auth/login';
  const body = Buffer.from('{"username":"a@example.com","password":"secret-1"}');

  describe('X-Idempotency-Key', () => {
    it('when it is missing or malformed, answers 400 before anything else, even with no signature', async () => {
      for (const key of [undefined, '', 'has space', 'ü-not-ascii', 'k'.repeat(256)]) {
        const headers: Record<string, string> = key === undefined ? {} : { 'x-idempotency-key': key };
        const res = await send(gw.url, 'POST', login, headers, body);
        assert.equal(res.status, 400, `key ${JSON.stringify(key)}`);
        assert.equal(res.json().message, 'Missing X-Idempotency-Key header');
        assert.equal(res.json().error, 'Bad Request');
      }
      assert.equal(gw.identity.received.length, 0);
    });

    it('when it has 255 visible characters, is accepted', async () => {
      const key = `${'~!'.repeat(127)}k`;
      const res = await send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body, idempotencyKey: key }), body);
      assert.equal(res.status, 200);
    });

    it('when it is reused by the same client key, answers 409 and proxies once', async () => {
      const idempotencyKey = newIdempotencyKey();
      const before = gw.identity.received.length;
      const first = await send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body, idempotencyKey }), body);
      const second = await send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body, idempotencyKey }), body);
      assert.equal(first.status, 200);
      assert.equal(second.status, 409);
      assert.deepEqual(second.json(), {
        timestamp: second.json().timestamp,
        status: 409,
        error: 'Conflict',
        message: 'Duplicate request detected (X-Idempotency-Key)',
        path: login,
      });
      assert.equal(gw.identity.received.length, before + 1);
    });

    it('when another client key uses the same idempotency key, lets it through (keys are scoped by keyid)', async () => {
      const idempotencyKey = newIdempotencyKey();
      for (const key of [gw.keys.hmac, gw.keys.ed25519]) {
        assert.equal((await send(gw.url, 'POST', login, signedHeaders('POST', login, { key, body, idempotencyKey }), body)).status, 200);
      }
    });

    it('is remembered 24 h for POST/PUT/PATCH/DELETE and 10 min for GET/HEAD, or as long as its nonce when that is longer', async () => {
      // The services document only some methods; a document with all six proxies each of them.
      const target = '/v1/accounts/update';
      const operation = { security: [{ bearerAuth: [] }], responses: { '200': { description: 'ok' } } };
      const apiDocument = { openapi: '3.1.0', paths: { [target]: Object.fromEntries(['post', 'put', 'patch', 'delete', 'get', 'head'].map((m) => [m, operation])) } };
      const local = await startGateway({ redis: testRedis.redis, apiDocument });
      try {
        const token = local.issuer.sign();
        // GET and HEAD: 10 min, but the nonce lives 2 × 300 + 2 s (a signature can be accepted that long).
        for (const [method, ttlS] of [['POST', 86_400], ['PUT', 86_400], ['PATCH', 86_400], ['DELETE', 86_400], ['GET', 602], ['HEAD', 602]] as const) {
          const idempotencyKey = newIdempotencyKey();
          const res = await send(local.url, method, target, signedHeaders(method, target, { key: local.keys.hmac, bearer: token, idempotencyKey }));
          assert.equal(res.status, 200, `${method}: ${res.body.toString()}`);
          const pttl = await testRedis.redis.pttl(idempotencyRedisKey(local.keys.hmac.keyId, idempotencyKey));
          assert.ok(pttl > (ttlS - 5) * 1000 && pttl <= ttlS * 1000, `${method}: pttl ${pttl}`);
        }
      } finally {
        await local.close();
      }
    });
  });

  describe('nonces', () => {
    it('when a nonce is reused by the same client key, answers 409 Replay attack detected', async () => {
      const nonce = newNonce();
      const first = await send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body, nonce }), body);
      const replay = await send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body, nonce }), body);
      assert.equal(first.status, 200);
      assert.equal(replay.status, 409);
      assert.equal(replay.json().message, 'Replay attack detected (nonce reused)');
      assert.equal(replay.json().error, 'Conflict');
    });

    it('when the very same signed request is sent twice, answers 409 for the nonce (checked before the idempotency key)', async () => {
      const headers = signedHeaders('POST', login, { key: gw.keys.hmac, body });
      assert.equal((await send(gw.url, 'POST', login, headers, body)).status, 200);
      const replay = await send(gw.url, 'POST', login, headers, body);
      assert.equal(replay.json().message, 'Replay attack detected (nonce reused)');
    });

    it('is remembered as long as a signature carrying it can be accepted (2 × skew + 1 s, and 1 s for the clocks\' second boundaries), scoped by keyid', async () => {
      const nonce = newNonce();
      assert.equal((await send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body, nonce }), body)).status, 200);
      const pttl = await testRedis.redis.pttl(nonceKey(gw.keys.hmac.keyId, nonce));
      assert.ok(pttl > 597_000 && pttl <= 602_000, `pttl ${pttl}`);
      assert.equal((await send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.ed25519, body, nonce }), body)).status, 200);
    });
  });

  describe('a signature dated at the far end of its window (review finding: a replay in its last second)', () => {
    it('with a skew of 1 s, a GET signed 1 s ahead and sent again just before that signature ages out is refused (409), its key kept as long', async () => {
      const skewS = 1;
      const local = await startGateway({ redis: testRedis.redis, env: { SIGNATURE_MAX_SKEW_S: String(skewS), IDEMPOTENCY_TTL_SAFE_S: '2' } });
      try {
        const target = '/v1/weather-stations/get-cities';
        // At the start of a second, so that the replay below falls in the signature's last accepted second.
        await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
        const second = Math.floor(Date.now() / 1000);
        const headers = signedHeaders('GET', target, { key: local.keys.hmac, bearer: local.issuer.sign(), created: second + skewS });
        assert.equal((await send(local.url, 'GET', target, headers)).status, 200);
        const nonce = /nonce="([^"]+)"/.exec(headers['signature-input']!)![1]!;
        const idempotencyKey = headers['x-idempotency-key']!;
        const nonceTtl = await testRedis.redis.pttl(nonceKey(local.keys.hmac.keyId, nonce));
        const keyTtl = await testRedis.redis.pttl(idempotencyRedisKey(local.keys.hmac.keyId, idempotencyKey));
        assert.ok(nonceTtl > 3000 && nonceTtl <= 4000, `nonce pttl ${nonceTtl}`);
        assert.ok(keyTtl > 3000 && keyTtl <= 4000, `idempotency key pttl ${keyTtl}`);
        // `created` is still within the skew until the clock's second passes created + skew: 2.5 s after the first.
        await new Promise((resolve) => setTimeout(resolve, (second + 2 * skewS) * 1000 + 500 - Date.now()));
        assert.equal(Math.floor(Date.now() / 1000) - (second + skewS), skewS, 'the replay is sent in the signature\'s last accepted second');
        const replay = await send(local.url, 'GET', target, headers);
        assert.equal(replay.status, 409, replay.body.toString());
        assert.equal(replay.json().message, 'Replay attack detected (nonce reused)');
        assert.equal(local.risk.received.length, 1, 'the replay reached the service');
      } finally {
        await local.close();
      }
    });
  });

  describe('under concurrency', () => {
    it('when 20 requests share a nonce, exactly one is proxied', async () => {
      const nonce = newNonce();
      const before = gw.identity.received.length;
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body, nonce }), body)),
      );
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, ...Array<number>(19).fill(409)]);
      assert.equal(answers.filter((a) => a.status === 409 && a.json().message === 'Replay attack detected (nonce reused)').length, 19);
      assert.equal(gw.identity.received.length, before + 1);
    });

    it('when 20 requests share an idempotency key, exactly one is proxied', async () => {
      const idempotencyKey = newIdempotencyKey();
      const before = gw.identity.received.length;
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => send(gw.url, 'POST', login, signedHeaders('POST', login, { key: gw.keys.hmac, body, idempotencyKey }), body)),
      );
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, ...Array<number>(19).fill(409)]);
      assert.equal(answers.filter((a) => a.status === 409 && a.json().message === 'Duplicate request detected (X-Idempotency-Key)').length, 19);
      assert.equal(gw.identity.received.length, before + 1);
    });
  });

  describe('after an upstream 5xx', () => {
    it('releases the idempotency key, so a retry with the same key is proxied', async () => {
      let fail = true;
      const identity = await startUpstream((_req, res) => {
        res.writeHead(fail ? 500 : 201, { 'content-type': 'application/json' }).end(JSON.stringify(fail ? { message: 'boom' } : { ok: true }));
      });
      const local = await startGateway({ redis: testRedis.redis, identity });
      try {
        const idempotencyKey = newIdempotencyKey();
        const first = await send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body, idempotencyKey }), body);
        assert.equal(first.status, 500);
        fail = false;
        const retry = await send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body, idempotencyKey }), body);
        assert.equal(retry.status, 201);
        const again = await send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body, idempotencyKey }), body);
        assert.equal(again.status, 409, 'a 2xx keeps the key');
        assert.equal(identity.received.length, 2);
      } finally {
        await local.close();
        await identity.close();
      }
    });

    it('keeps the key after an upstream 4xx', async () => {
      const identity = await startUpstream((_req, res) => {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'bad' }));
      });
      const local = await startGateway({ redis: testRedis.redis, identity });
      try {
        const idempotencyKey = newIdempotencyKey();
        assert.equal((await send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body, idempotencyKey }), body)).status, 400);
        assert.equal((await send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body, idempotencyKey }), body)).status, 409);
      } finally {
        await local.close();
        await identity.close();
      }
    });
  });

  describe('when Redis is unreachable', () => {
    it('answers 503 in under 1 s and proxies nothing', async () => {
      const redis = unreachableRedis();
      const local = await startGateway({ redis, keepMirror: true });
      try {
        const started = Date.now();
        const res = await send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body }), body);
        assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
        assert.equal(res.status, 503);
        assert.equal(res.json().error, 'Service Unavailable');
        assert.equal(local.identity.received.length, 0);
        // The key's release fails too: kept to be sent again, one warn line for the outage with the reason and no
        // stack (the 503's own line has the cause's). A second failed request adds no line.
        const releaseLines = () => local.logs.lines().filter((l) => l.msg === 'could not release the idempotency keys of failed requests; they are released once Redis answers');
        for (let waited = 0; releaseLines().length === 0 && waited < 2000; waited += 20) await new Promise((r) => setTimeout(r, 20));
        const [release] = releaseLines();
        assert.equal(release?.level, 'warn');
        assert.match(String(release?.reason), /\S/);
        assert.equal(release?.err, undefined);
        assert.equal((await send(local.url, 'POST', login, signedHeaders('POST', login, { key: local.keys.hmac, body }), body)).status, 503);
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(releaseLines().length, 1, 'a line per failed release');
      } finally {
        await local.close();
        await closeRedis(redis);
      }
    });

    it('on a station path, answers 503 in under 1 s with `messages` (CONTRACT.md part 7) and proxies nothing', async () => {
      const redis = unreachableRedis();
      const local = await startGateway({ redis, keepMirror: true });
      try {
        const target = '/v1/weather-stations/by/city-district';
        const stationBody = Buffer.from('{"city":"Ankara","district":"Çankaya"}');
        const started = Date.now();
        const res = await send(local.url, 'POST', target, signedHeaders('POST', target, { key: local.keys.hmac, body: stationBody, bearer: local.issuer.sign() }), stationBody);
        assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
        assert.equal(res.status, 503, res.body.toString());
        const message = 'Service temporarily unavailable';
        assert.deepEqual(res.json(), { timestamp: res.json().timestamp, status: 503, error: 'Service Unavailable', message, messages: [message], path: target });
        assert.equal(local.risk.received.length, 0);
      } finally {
        await local.close();
        await closeRedis(redis);
      }
    });
  });
});

describe('the Redis keys of a client key (CONTRACT.md part 14)', () => {
  it('are tagged with the key id as it is, when it needs no encoding', () => {
    assert.equal(nonceKey('client-1.v2_x', 'n'.repeat(16)), `gateway:{ck:client-1.v2_x}:nonce:${'n'.repeat(16)}`);
  });

  it('encode %, :, { and } in the key id: no two key ids share a key, and the hash tag is the whole key id', () => {
    assert.equal(nonceKey('a:b', 'n'), 'gateway:{ck:a%3Ab}:nonce:n');
    assert.equal(nonceKey('{x}%', 'n'), 'gateway:{ck:%7Bx%7D%25}:nonce:n');
    // `a` + key `b:c` and `a:b` + key `c` would otherwise name the same key.
    assert.notEqual(idempotencyRedisKey('a', 'b:c'), idempotencyRedisKey('a:b', 'c'));
    assert.notEqual(nonceKey('a%3Ab', 'n'), nonceKey('a:b', 'n'));
  });
});
