import assert from 'node:assert/strict';
import { type Client, type CreateUserRequest, ApiError, NetworkError, createClient } from '@platform/client';
import { type FakeGateway, defaultHandler, errorReply, startFakeGateway } from './support/fake-gateway.ts';
import { verifyRecorded } from './support/verify-signature.ts';

const key = { alg: 'hmac-sha256', secret: 'test-secret' } as const;
const verifyKey = { alg: 'hmac-sha256', secret: 'test-secret' } as const;
const tokens = { username: 'user@example.com', type: 'Bearer', accessToken: 'access-0', refreshToken: 'refresh-0' } as const;

describe('client requests (signatures, nonces, idempotency keys, errors)', () => {
  let gw: FakeGateway;
  let client: Client;

  beforeEach(async () => {
    gw = await startFakeGateway();
    client = createClient({ env: 'local', baseUrl: gw.url, keyId: 'test-key', key, tokens: { ...tokens } });
  });
  afterEach(async () => {
    // Every request any test sent must verify with an independent verifier.
    for (const req of gw.requests) verifyRecorded(req, verifyKey);
    await gw.close();
  });

  it('signs each call with a fresh nonce and a fresh idempotency key', async () => {
    await client.stations.cities();
    await client.stations.cities();
    const [a, b] = gw.requests.map((r) => ({ key: r.headers['x-idempotency-key'], nonce: verifyRecorded(r, verifyKey).nonce }));
    assert.ok(a && b);
    assert.notEqual(a.key, b.key);
    assert.notEqual(a.nonce, b.nonce);
    assert.match(a.nonce, /^[A-Za-z0-9_-]{24,128}$/);
  });

  it('sends the explicit idempotency key of a call, so a POST can be retried safely', async () => {
    const body: CreateUserRequest = { username: 'new@example.com', firstName: 'A', lastName: 'B', locale: 'tr_TR', timezone: 'Europe/Istanbul', roles: ['STANDARD_USER'], status: 'ACTIVE' };
    await client.users.create(body, { idempotencyKey: 'create-new-user-1' });
    await client.users.create(body, { idempotencyKey: 'create-new-user-1' });
    assert.deepEqual(gw.requests.map((r) => r.headers['x-idempotency-key']), ['create-new-user-1', 'create-new-user-1']);
    assert.deepEqual(gw.requests[0]!.json, body);
    await assert.rejects(client.users.create(body, { idempotencyKey: 'has space' }), TypeError);
    assert.equal(gw.requests.length, 2);
  });

  it('sends the path percent-encoded and the query as given, and signs exactly that', async () => {
    await client.stations.districtsOf('İstanbul');
    await client.stations.nearest({ latitude: 41.0082, longitude: 28.9784, limit: 3 });
    await client.stations.byId(17130);
    assert.deepEqual(gw.requests.map((r) => r.url), [
      '/v1/weather-stations/get-districts-of/%C4%B0stanbul',
      '/v1/weather-stations/nearest?latitude=41.0082&longitude=28.9784&limit=3',
      '/v1/weather-stations/by/id/17130',
    ]);
  });

  it('sends JSON bodies with Content-Type and a Content-Digest of the exact bytes', async () => {
    await client.stations.byCityDistrict({ city: 'Şanlıurfa', district: 'Halfeti' });
    const [req] = gw.requests;
    assert.equal(req!.method, 'POST');
    assert.equal(req!.headers['content-type'], 'application/json');
    assert.deepEqual(req!.json, { city: 'Şanlıurfa', district: 'Halfeti' });
    assert.deepEqual(verifyRecorded(req!, verifyKey).components, ['@method', '@path', '@query', 'x-idempotency-key', 'content-digest', 'authorization']);
  });

  it('states `created` from the clock option', async () => {
    const fixed = createClient({ env: 'local', baseUrl: gw.url, keyId: 'test-key', key, tokens, clock: () => 1_700_000_123_999 });
    await fixed.stations.cities();
    assert.equal(verifyRecorded(gw.requests[0]!, verifyKey).created, 1_700_000_123);
  });

  it('sends stations to the risk base URL and the rest to the base URL', async () => {
    const risk = await startFakeGateway();
    try {
      const split = createClient({ env: 'test', baseUrl: gw.url, riskBaseUrl: risk.url, keyId: 'test-key', key, tokens });
      await split.stations.cities();
      await split.accounts.get('4b9e8a57-7c7e-4d3a-9a43-2f1f0c6a9d10');
      assert.deepEqual(risk.requests.map((r) => r.url), ['/v1/weather-stations/get-cities']);
      assert.deepEqual(gw.requests.map((r) => r.url), ['/v1/accounts/4b9e8a57-7c7e-4d3a-9a43-2f1f0c6a9d10']);
    } finally {
      await risk.close();
    }
    assert.equal(createClient({ env: 'local', keyId: 'k', key }).riskBaseUrl, 'http://127.0.0.1:8080');
  });

  it('throws ApiError with the error body, status and request id of an error answer', async () => {
    gw.handler = (req) => {
      const reply = errorReply(404, 'Not Found', 'City not found', req.url, { messages: ['City not found: Atlantis'] });
      return { ...reply, headers: { 'x-request-id': 'req-42' } };
    };
    const err = await client.stations.districtsOf('Atlantis').catch((e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 404);
    assert.equal(err.requestId, 'req-42');
    assert.deepEqual({ ...err.body, timestamp: '' }, {
      timestamp: '',
      status: 404,
      error: 'Not Found',
      message: 'City not found',
      messages: ['City not found: Atlantis'],
      path: '/v1/weather-stations/get-districts-of/Atlantis',
    });
  });

  it('wraps an answer that is not in the error shape (an HTML 502 of a proxy) into one', async () => {
    gw.handler = () => ({ status: 502, body: '<html>Bad Gateway</html>', headers: { 'content-type': 'text/html' } });
    const err = await client.stations.cities().catch((e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.body.status, 502);
    assert.equal(err.body.error, 'Bad Gateway');
    assert.equal(err.body.path, '/v1/weather-stations/get-cities');
    assert.equal(err.body.message, '<html>Bad Gateway</html>');
  });

  describe('a 503 with Retry-After (Redis restarting, revocations restored, the second of a Redis loss)', () => {
    const unavailable = (req: { url: string }, wait = '1') => ({ ...errorReply(503, 'Service Unavailable', 'Replay protection was reset', req.url), headers: { 'retry-after': wait } });

    it('is retried once after that delay, signed again (fresh nonce and created), with the same idempotency key', async () => {
      gw.handler = (req, index) => (index === 0 ? unavailable(req) : defaultHandler(req, index));
      const started = Date.now();
      const body: CreateUserRequest = { username: 'new@example.com', firstName: 'A', lastName: 'B', locale: 'tr_TR', timezone: 'Europe/Istanbul', roles: ['STANDARD_USER'], status: 'ACTIVE' };
      await client.users.create(body);
      assert.ok(Date.now() - started >= 1000, `retried after ${Date.now() - started} ms, before Retry-After`);
      assert.equal(gw.requests.length, 2);
      const [first, second] = gw.requests.map((r) => ({ key: r.headers['x-idempotency-key'], signed: verifyRecorded(r, verifyKey), body: r.json }));
      assert.equal(second!.key, first!.key, 'the idempotency key a 503 left free');
      assert.notEqual(second!.signed.nonce, first!.signed.nonce);
      assert.ok(second!.signed.created >= first!.signed.created + 1, 'signed again, in a later second');
      assert.deepEqual(second!.body, body);
    });

    it('only once: a second 503 is thrown as ApiError with its retryAfterS', async () => {
      gw.handler = (req) => unavailable(req);
      const err = await client.stations.cities().catch((e: unknown) => e);
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 503);
      assert.equal(err.retryAfterS, 1);
      assert.equal(gw.requests.length, 2);
    });

    it('not at all without Retry-After, or with a wait longer than 5 s (the caller\'s to decide)', async () => {
      gw.handler = (req, index) => (index === 0 ? errorReply(503, 'Service Unavailable', 'Down', req.url) : unavailable(req, '120'));
      assert.equal(((await client.stations.cities().catch((e: unknown) => e)) as ApiError).status, 503);
      const err = (await client.stations.cities().catch((e: unknown) => e)) as ApiError;
      assert.equal(err.retryAfterS, 120);
      assert.equal(gw.requests.length, 2);
    });

    it('stops waiting when the caller aborts', async () => {
      gw.handler = (req) => unavailable(req, '5');
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error('caller gave up')), 100);
      const started = Date.now();
      await assert.rejects(client.stations.cities({ signal: controller.signal }), /caller gave up/);
      assert.ok(Date.now() - started < 2000);
      assert.equal(gw.requests.length, 1);
    });
  });

  it('throws NetworkError when nothing answers', async () => {
    const deadUrl = gw.url;
    await gw.close();
    gw = await startFakeGateway(defaultHandler);
    const dead = createClient({ env: 'local', baseUrl: deadUrl, keyId: 'k', key, tokens });
    const err = await dead.stations.cities().catch((e: unknown) => e);
    assert.ok(err instanceof NetworkError, String(err));
    assert.match(err.message, /GET http:\/\/127\.0\.0\.1:\d+\/v1\/weather-stations\/get-cities failed/);
  });

  it('resetPassword with a loginPageLink returns the 303 target without following it', async () => {
    gw.handler = () => ({ status: 303, headers: { location: 'http://localhost:3000/login?message=Password+changed' } });
    const outcome = await client.users.resetPassword({ userId: 'u', token: 't', newPassword: 'new-password-1', loginPageLink: 'http://localhost:3000/login' });
    assert.deepEqual(outcome, { redirectTo: 'http://localhost:3000/login?message=Password+changed' });
    assert.equal(gw.requests.length, 1);
    assert.equal(gw.requests[0]!.headers.authorization, undefined);
  });

  it('resetPassword without a link returns the message; requestPasswordReset returns the ticket (201) or null (202)', async () => {
    gw.handler = (req) =>
      req.url === '/v1/users/password-reset'
        ? { status: 200, body: { message: 'Password changed' } }
        : req.headers.authorization !== undefined
          ? { status: 201, body: { userId: 'u', token: 't', expiresAt: '2030-01-01T00:00:00Z' } }
          : { status: 202 };
    assert.deepEqual(await client.users.resetPassword({ userId: 'u', token: 't', newPassword: 'new-password-1' }), { message: 'Password changed' });
    assert.deepEqual(await client.users.requestPasswordReset({ username: 'a@example.com' }), { userId: 'u', token: 't', expiresAt: '2030-01-01T00:00:00Z' });
    client.setTokens(undefined);
    assert.equal(await client.users.requestPasswordReset({ username: 'a@example.com' }), null);
  });
});
