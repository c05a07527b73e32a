// The SDK against the real gateway (its createGateway, real Redis, fake upstreams): what the SDK signs
// is what the gateway verifies, for both algorithms, with a path, a query, a body and a bearer.
import assert from 'node:assert/strict';
import { type Client, ApiError, createClient, createSigner, signedFetch } from '@platform/client';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { type FakeUpstream, startUpstream } from '../../../gateway/test/support/fake-upstream.ts';
import { type TestGateway, startGateway } from '../../../gateway/test/support/gateway-harness.ts';

describe('@platform/client through the real gateway', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;
  let identity: FakeUpstream;

  before(async () => {
    testRedis = await createTestRedis('client-gw');
    // Identity answers a refresh with a token the gateway's JWKS accepts; anything else is echoed.
    identity = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const refreshed = { username: 'someone@example.com', type: 'Bearer', accessToken: gw.issuer.sign(), refreshToken: 'rotated' };
      res.end(JSON.stringify(req.url === '/v1/auth/refresh' ? refreshed : { path: req.url }));
    });
    gw = await startGateway({ redis: testRedis.redis, identity });
  });
  after(async () => {
    await gw?.close();
    await identity?.close();
    await testRedis?.close();
  });

  const tokens = () => ({ username: 'someone@example.com', type: 'Bearer' as const, accessToken: gw.issuer.sign(), refreshToken: 'unused' });
  const clientFor = (alg: 'hmac-sha256' | 'ed25519'): Client =>
    alg === 'hmac-sha256'
      ? createClient({ env: 'local', baseUrl: gw.url, keyId: gw.keys.hmac.keyId, key: gw.keys.hmac, tokens: tokens() })
      : createClient({
          env: 'local',
          baseUrl: gw.url,
          keyId: gw.keys.ed25519.keyId,
          key: { alg: 'ed25519', privateKey: gw.keys.ed25519.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
          tokens: tokens(),
        });

  for (const alg of ['hmac-sha256', 'ed25519'] as const) {
    it(`${alg}: GET without query, GET with a percent-encoded path and a query, and POST with a body pass verification`, async () => {
      const sdk = clientFor(alg);
      const seen = gw.risk.received.length;
      await sdk.stations.cities();
      await sdk.stations.districtsOf('Şanlıurfa');
      await sdk.stations.nearest({ latitude: 37.16, longitude: 38.79, limit: 2 });
      await sdk.stations.byCityDistrict({ city: 'İstanbul', district: 'Kadıköy' });
      const received = gw.risk.received.slice(seen);
      assert.deepEqual(received.map((r) => r.url), [
        '/v1/weather-stations/get-cities',
        '/v1/weather-stations/get-districts-of/%C5%9Eanl%C4%B1urfa',
        '/v1/weather-stations/nearest?latitude=37.16&longitude=38.79&limit=2',
        '/v1/weather-stations/by/city-district',
      ]);
      assert.deepEqual(JSON.parse(received[3]!.body.toString('utf8')), { city: 'İstanbul', district: 'Kadıköy' });
      assert.equal(received[0]!.headers['x-client-key-id'], alg === 'ed25519' ? gw.keys.ed25519.keyId : gw.keys.hmac.keyId);
    });
  }

  it('a wrong secret is refused with 401 Invalid request signature, and the SDK does not try a refresh', async () => {
    const wrong = createClient({ env: 'local', baseUrl: gw.url, keyId: gw.keys.hmac.keyId, key: { alg: 'hmac-sha256', secret: 'not-the-secret' }, tokens: tokens() });
    const seen = gw.identity.received.length;
    const err = await wrong.stations.cities().catch((e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 401);
    assert.equal(err.body.message, 'Invalid request signature');
    assert.equal(gw.identity.received.length, seen, 'no refresh reached identity');
  });

  it('a POST retried with the same explicit idempotency key is answered 409 Duplicate by the gateway', async () => {
    const sdk = clientFor('hmac-sha256');
    const body = { city: 'Bartın', district: 'Amasra' };
    const key = `same-${Date.now()}`;
    await sdk.stations.byCityDistrict(body, { idempotencyKey: key });
    const err = await sdk.stations.byCityDistrict(body, { idempotencyKey: key }).catch((e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 409);
    assert.equal(err.body.message, 'Duplicate request detected (X-Idempotency-Key)');
  });

  it('an expired access token: the gateway answers 401, the SDK refreshes and its retry (new nonce and key) passes', async () => {
    const sdk = clientFor('hmac-sha256');
    sdk.setTokens({ username: 'someone@example.com', type: 'Bearer', accessToken: gw.issuer.sign({ expiresInS: -60 }), refreshToken: 'old' });
    const seen = gw.risk.received.length;
    const key = `expired-${Date.now()}`;
    await sdk.stations.byCityDistrict({ city: 'Bartın', district: 'Ulus' }, { idempotencyKey: key });
    assert.equal(sdk.getTokens()?.refreshToken, 'rotated');
    assert.deepEqual(identity.received.map((r) => r.url).slice(-1), ['/v1/auth/refresh']);
    const retried = gw.risk.received.slice(seen);
    assert.equal(retried.length, 1);
    assert.notEqual(retried[0]!.headers['x-idempotency-key'], key);
  });

  it('signedFetch: a form POST, a GET with a query and a bearer token, each signed as the gateway verifies, with a fresh idempotency key each', async () => {
    const fetchSigned = signedFetch(createSigner(gw.keys.hmac.keyId, gw.keys.hmac));
    const seen = { identity: gw.identity.received.length, risk: gw.risk.received.length };
    const revoked = await fetchSigned(new URL('/v1/auth/revoke', gw.url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'abc' }),
    });
    assert.equal(revoked.status, 200, await revoked.text());
    const withQuery = await fetchSigned(`${gw.url}/v1/weather-stations/get-districts-of/%C5%9Eanl%C4%B1urfa?x=1`, { headers: { authorization: `Bearer ${gw.issuer.sign()}` } });
    assert.equal(withQuery.status, 200, await withQuery.text());
    const [form] = gw.identity.received.slice(seen.identity);
    assert.equal(form?.body.toString(), 'token=abc');
    const [get] = gw.risk.received.slice(seen.risk);
    assert.notEqual(form?.headers['x-idempotency-key'], get?.headers['x-idempotency-key']);
    // Another key's signature over the same request is refused: the signature is the signer's.
    const forged = await signedFetch(createSigner(gw.keys.hmac.keyId, { alg: 'hmac-sha256', secret: 'not-the-secret-0123456789' }))(`${gw.url}/v1/weather-stations/get-cities`);
    assert.equal(forged.status, 401);
  });
});
