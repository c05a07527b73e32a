import assert from 'node:assert/strict';
import { TOKEN_CLOCK_TOLERANCE_S } from '@platform/auth';
import { blacklistToken, createTestIssuer, sessionKey } from '@platform/auth/testing';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { idempotencyRedisKey } from '../src/admission/admission.ts';
import { deadUrl } from './support/fake-upstream.ts';
import { type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { newIdempotencyKey, newNonce, signedHeaders } from './support/signing-client.ts';

describe('gateway bearer check (CONTRACT.md part 4)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;

  before(async () => {
    testRedis = await createTestRedis('gw-bearer');
    gw = await startGateway({ redis: testRedis.redis });
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  const stations = '/v1/weather-stations/get-cities';

  async function expectBadCredentials(headers: Record<string, string>, target = stations, method = 'GET', body?: Buffer): Promise<void> {
    const before = gw.risk.received.length + gw.identity.received.length;
    const res = await send(gw.url, method, target, headers, body);
    assert.equal(res.status, 401, res.body.toString());
    // Station error bodies carry `messages`, the gateway's own too (CONTRACT.md part 7).
    const messages = target.startsWith('/v1/weather-stations/') ? { messages: ['Bad Credentials'] } : {};
    assert.deepEqual(res.json(), { timestamp: res.json().timestamp, status: 401, error: 'Unauthorized', message: 'Bad Credentials', ...messages, path: target });
    assert.equal(gw.risk.received.length + gw.identity.received.length, before, 'reached an upstream');
  }

  it('when a protected route has no bearer token, answers 401 Bad Credentials', async () => {
    await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac }));
    const body = Buffer.from('{"userId":"00000000-0000-4000-8000-000000000000","firstName":"X"}');
    await expectBadCredentials(signedHeaders('PATCH', '/v1/users/update', { key: gw.keys.hmac, body }), '/v1/users/update', 'PATCH', body);
  });

  it('when the token is from another issuer, expired or garbage, answers 401', async () => {
    const stranger = createTestIssuer(gw.issuer.issuer, gw.issuer.audience);
    for (const token of [stranger.sign(), gw.issuer.sign({ expiresInS: -60 }), gw.issuer.sign({ aud: 'urn:other' }), 'not.a.jwt']) {
      await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token }));
    }
  });

  it('when the token was revoked at logout, answers 401 and keeps the idempotency key', async () => {
    const [jti, sid] = [`jti-${newNonce()}`, `sid-${newNonce()}`];
    const token = gw.issuer.sign({ jti, sid });
    await blacklistToken(testRedis.redis, { tokenId: jti, sessionId: sid }, Math.floor(Date.now() / 1000) + 900);
    const idempotencyKey = newIdempotencyKey();
    await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token, idempotencyKey }));
    const retry = await send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: gw.issuer.sign(), idempotencyKey }));
    assert.equal(retry.status, 409, 'a 401 is not a 5xx: the key stays used');
  });

  it('when the token\'s session was ended (logout elsewhere, password change), answers 401', async () => {
    const sid = `sid-${newNonce()}`;
    await testRedis.redis.set(sessionKey(sid), '1', 'EX', 900);
    await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: gw.issuer.sign({ sid }) }));
  });

  it('when the token is valid and not revoked, proxies with the Authorization header for the service to check roles', async () => {
    const token = gw.issuer.sign({ roles: ['ADMIN'] });
    const res = await send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token }));
    assert.equal(res.status, 200);
    assert.equal(gw.risk.received.at(-1)?.headers.authorization, `Bearer ${token}`);
  });

  describe('a token the gateway verified before (remembered: no signature check, no promise, CONTRACT.md part 4 all the same)', () => {
    const call = async (token: string) => send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token }));

    it('when it is revoked after it was accepted, answers 401', async () => {
      const [jti, sid] = [`jti-${newNonce()}`, `sid-${newNonce()}`];
      const token = gw.issuer.sign({ jti, sid });
      assert.equal((await call(token)).status, 200);
      assert.equal((await call(token)).status, 200, 'the second time from memory');
      await blacklistToken(testRedis.redis, { tokenId: jti, sessionId: sid }, Math.floor(Date.now() / 1000) + 900);
      await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token }));
    });

    it('when its session is ended after it was accepted, answers 401', async () => {
      const sid = `sid-${newNonce()}`;
      const token = gw.issuer.sign({ sid });
      assert.equal((await call(token)).status, 200);
      await testRedis.redis.set(sessionKey(sid), '1', 'EX', 900);
      await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token }));
    });

    it('when it expires after it was accepted (the clock tolerance passed), answers 401', async () => {
      // Early in a second, a token accepted until that second ends (exp + TOKEN_CLOCK_TOLERANCE_S is the next one).
      await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
      const token = gw.issuer.sign({ expiresInS: 1 - TOKEN_CLOCK_TOLERANCE_S });
      const accepted = await call(token);
      assert.equal(accepted.status, 200, accepted.body.toString());
      await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
      await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token }));
    });

    it('is held to the second factor and the binding to a client key every time', async () => {
      const token = gw.issuer.sign({ aal: 1, sfr: true });
      for (let i = 0; i < 2; i++) assert.equal((await call(token)).status, 403);
      const bound = gw.issuer.sign({ cnf: { kid: 'another-client-key' } });
      for (let i = 0; i < 2; i++) assert.equal((await call(bound)).status, 401);
    });
  });

  it('lets login, refresh, logout, password-reset and password-reset-request through without a token', async () => {
    for (const target of ['/v1/auth/login', '/v1/auth/refresh', '/v1/auth/logout', '/v1/users/password-reset', '/v1/users/password-reset-request']) {
      const body = Buffer.from('{}');
      const res = await send(gw.url, 'POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body }), body);
      assert.equal(res.status, 200, target);
      assert.equal(gw.identity.received.at(-1)?.url, target);
    }
  });

  it('on a route where a token is optional (an ADMIN\'s reset request): none goes on as anonymous, a bad one is 401 here, a good one goes on with its token', async () => {
    const target = '/v1/users/password-reset-request';
    const body = Buffer.from('{"username":"a@example.com"}');
    const before = gw.identity.received.length;
    const anonymous = await send(gw.url, 'POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body }), body);
    assert.equal(anonymous.status, 200);
    assert.equal(gw.identity.received.at(-1)?.headers.authorization, undefined);
    const bad = await send(gw.url, 'POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, bearer: 'expired.or.whatever' }), body);
    assert.equal(bad.status, 401);
    assert.equal(bad.json().message, 'Bad Credentials');
    assert.equal(gw.identity.received.length, before + 1, 'the bad token reached identity');
    const token = gw.issuer.sign({ roles: ['ADMIN'], aal: 2 });
    const good = await send(gw.url, 'POST', target, signedHeaders('POST', target, { key: gw.keys.hmac, body, bearer: token }), body);
    assert.equal(good.status, 200);
    assert.equal(gw.identity.received.at(-1)?.headers.authorization, `Bearer ${token}`);
  });

  it('checks the nonce before the bearer token: a replay without a token answers 409', async () => {
    const nonce = newNonce();
    const token = gw.issuer.sign();
    assert.equal((await send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token, nonce }))).status, 200);
    const replay = await send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, nonce }));
    assert.equal(replay.status, 409);
    assert.equal(replay.json().message, 'Replay attack detected (nonce reused)');
  });

  it('when the token keys cannot be fetched, answers 503 and claims no idempotency key', async () => {
    const local = await startGateway({ redis: testRedis.redis, env: { IDENTITY_JWKS_URL: `${await deadUrl()}/.well-known/jwks.json` } });
    try {
      const idempotencyKey = newIdempotencyKey();
      const res = await send(local.url, 'GET', stations, signedHeaders('GET', stations, { key: local.keys.hmac, bearer: local.issuer.sign(), idempotencyKey }));
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '1');
      // The gateway's own 503 on a station path carries `messages` too (CONTRACT.md part 7).
      const message = 'Token verification keys are unavailable';
      assert.deepEqual(res.json(), { timestamp: res.json().timestamp, status: 503, error: 'Service Unavailable', message, messages: [message], path: stations });
      assert.equal(await testRedis.redis.exists(idempotencyRedisKey(local.keys.hmac.keyId, idempotencyKey)), 0);
      assert.equal(local.risk.received.length, 0);
    } finally {
      await local.close();
    }
  });

  describe('the second factor (CONTRACT.md part 15)', () => {
    it('an aal 1 token of a user who must show a second factor: 403 Second factor required, nothing proxied; the operations of enrolment and of the second factor itself are proxied', async () => {
      const token = gw.issuer.sign({ aal: 1, sfr: true });
      const before = gw.risk.received.length;
      const refused = await send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token }));
      assert.equal(refused.status, 403, refused.body.toString());
      assert.deepEqual(refused.json(), { timestamp: refused.json().timestamp, status: 403, error: 'Forbidden', message: 'Second factor required', messages: ['Second factor required'], path: stations });
      assert.equal(gw.risk.received.length, before);
      for (const target of ['/v1/auth/factors', '/v1/auth/sessions']) {
        const res = await send(gw.url, 'GET', target, signedHeaders('GET', target, { key: gw.keys.hmac, bearer: token }));
        assert.equal(res.status, 200, `${target}: ${res.body.toString()}`);
      }
      const body = Buffer.from('{"code":"123456"}');
      const lift = await send(gw.url, 'POST', '/v1/auth/second-factor', signedHeaders('POST', '/v1/auth/second-factor', { key: gw.keys.hmac, bearer: token, body }), body);
      assert.equal(lift.status, 200, lift.body.toString());
    });

    it('aal 2, a user asked for no second factor, and a token of an earlier version (neither claim) pass', async () => {
      for (const token of [gw.issuer.sign({ aal: 2, sfr: true }), gw.issuer.sign({ aal: 1, sfr: false }), gw.issuer.sign()]) {
        assert.equal((await send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token }))).status, 200);
      }
    });

    it('a revoked aal 1 token is 401, not 403', async () => {
      const [jti, sid] = [`jti-${newNonce()}`, `sid-${newNonce()}`];
      await blacklistToken(testRedis.redis, { tokenId: jti, sessionId: sid }, Math.floor(Date.now() / 1000) + 900);
      await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: gw.issuer.sign({ jti, sid, aal: 1, sfr: true }) }));
    });

    it('a token whose aal or sfr is not what the contract says (aal 3, sfr "yes") is 401', async () => {
      for (const claims of [{ aal: 3 }, { sfr: 'yes' }]) {
        await expectBadCredentials(signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: gw.issuer.sign(claims as never) }));
      }
    });
  });
});
