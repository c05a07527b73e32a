import assert from 'node:assert/strict';
import { type AuthenticationResult, type Client, ApiError, createClient } from '@platform/client';
import { type FakeGateway, type Recorded, defaultHandler, errorReply, startFakeGateway, tokensReply } from './support/fake-gateway.ts';
import { verifyRecorded } from './support/verify-signature.ts';

const key = { alg: 'hmac-sha256', secret: 'test-secret' } as const;
const badCredentials = (req: Recorded) => errorReply(401, 'Unauthorized', 'Bad Credentials', req.url);
const paths = (gw: FakeGateway) => gw.requests.map((r) => r.url);

describe('client tokens: login, bearer, refresh-once-on-401, logout', () => {
  let gw: FakeGateway;
  let client: Client;
  let saved: (AuthenticationResult | undefined)[];

  beforeEach(async () => {
    gw = await startFakeGateway();
    saved = [];
    client = createClient({ env: 'local', baseUrl: gw.url, keyId: 'test-key', key, onTokens: (t) => saved.push(t) });
  });
  afterEach(async () => {
    for (const req of gw.requests) verifyRecorded(req, key);
    await gw.close();
  });

  describe('client.auth.login', () => {
    it('stores the tokens, and later calls send them as Authorization: Bearer (login itself sends none)', async () => {
      const result = await client.auth.login({ username: 'user@example.com', password: 'pw-123456' });
      assert.equal(result.accessToken, 'access-0');
      assert.deepEqual(client.getTokens(), result);
      assert.deepEqual(saved, [result]);
      await client.stations.cities();
      const [login, cities] = gw.requests;
      assert.equal(login!.headers.authorization, undefined);
      assert.deepEqual(login!.json, { username: 'user@example.com', password: 'pw-123456' });
      assert.equal(cities!.headers.authorization, 'Bearer access-0');
    });

    it('is never refreshed and retried on 401', async () => {
      client.setTokens({ username: 'u', type: 'Bearer', accessToken: 'old', refreshToken: 'old-refresh' });
      gw.handler = badCredentials;
      await assert.rejects(client.auth.login({ username: 'u@example.com', password: 'wrong-pass' }), (err: unknown) => err instanceof ApiError && err.status === 401);
      assert.deepEqual(paths(gw), ['/v1/auth/login']);
    });
  });

  describe('refresh on 401', () => {
    beforeEach(() => client.setTokens({ username: 'u', type: 'Bearer', accessToken: 'expired', refreshToken: 'refresh-old' }));

    it('refreshes once, retries once with a fresh nonce and idempotency key, and keeps the new tokens', async () => {
      gw.handler = (req, i) => (i === 0 ? badCredentials(req) : defaultHandler(req, i));
      const cities = await client.stations.cities({ idempotencyKey: 'cities-1' });
      assert.deepEqual(cities, ['Adana', 'Adıyaman', 'İstanbul']);
      assert.deepEqual(paths(gw), ['/v1/weather-stations/get-cities', '/v1/auth/refresh', '/v1/weather-stations/get-cities']);
      const [first, refresh, retry] = gw.requests;
      assert.deepEqual(refresh!.json, { refreshToken: 'refresh-old' });
      assert.equal(refresh!.headers.authorization, undefined);
      assert.equal(first!.headers.authorization, 'Bearer expired');
      assert.equal(retry!.headers.authorization, 'Bearer access-1');
      assert.equal(first!.headers['x-idempotency-key'], 'cities-1');
      assert.notEqual(retry!.headers['x-idempotency-key'], 'cities-1');
      assert.notEqual(verifyRecorded(retry!, key).nonce, verifyRecorded(first!, key).nonce);
      assert.equal(client.getTokens()?.refreshToken, 'refresh-1');
      assert.deepEqual(saved.map((t) => t?.accessToken), ['access-1']);
    });

    it('gives up after one refresh and one retry', async () => {
      gw.handler = (req, i) => (req.url === '/v1/auth/refresh' ? tokensReply(i) : badCredentials(req));
      const err = await client.accounts.get('4b9e8a57-7c7e-4d3a-9a43-2f1f0c6a9d10').catch((e: unknown) => e);
      assert.ok(err instanceof ApiError);
      assert.equal(err.status, 401);
      assert.equal(err.body.message, 'Bad Credentials');
      assert.equal(gw.requests.length, 3);
      assert.equal(paths(gw)[1], '/v1/auth/refresh');
    });

    it('when the refresh token is refused, throws the original 401 and forgets the tokens', async () => {
      gw.handler = badCredentials;
      await assert.rejects(client.stations.cities(), (err: unknown) => err instanceof ApiError && err.status === 401 && err.url.endsWith('/get-cities'));
      assert.deepEqual(paths(gw), ['/v1/weather-stations/get-cities', '/v1/auth/refresh']);
      assert.equal(client.getTokens(), undefined);
      assert.deepEqual(saved, [undefined]);
    });

    it('does not refresh when the 401 is about the request signature', async () => {
      gw.handler = (req) => errorReply(401, 'Unauthorized', 'Invalid request signature', req.url);
      await assert.rejects(client.stations.cities(), ApiError);
      assert.deepEqual(paths(gw), ['/v1/weather-stations/get-cities']);
      assert.equal(client.getTokens()?.accessToken, 'expired');
    });

    it('makes one refresh for concurrent calls that all get 401 (refresh tokens rotate)', async () => {
      gw.handler = (req, i) => (req.headers.authorization === 'Bearer expired' ? badCredentials(req) : defaultHandler(req, i));
      const results = await Promise.all([client.stations.cities(), client.stations.cities(), client.stations.byId(17130)]);
      assert.equal(results.length, 3);
      assert.equal(paths(gw).filter((p) => p === '/v1/auth/refresh').length, 1);
    });

    it('does not refresh for calls that send no bearer token (refresh, logout, password reset)', async () => {
      gw.handler = badCredentials;
      await assert.rejects(client.auth.refresh(), ApiError);
      await assert.rejects(client.auth.logout(), ApiError);
      await assert.rejects(client.users.resetPassword({ userId: 'u', token: 't', newPassword: 'new-password-1' }), ApiError);
      assert.deepEqual(paths(gw), ['/v1/auth/refresh', '/v1/auth/logout', '/v1/users/password-reset']);
    });
  });

  describe('client.auth.refresh and client.auth.logout', () => {
    it('refresh sends the stored refresh token and stores the new pair', async () => {
      await client.auth.login({ username: 'user@example.com', password: 'pw-123456' });
      await client.auth.refresh();
      assert.deepEqual(gw.requests[1]!.json, { refreshToken: 'refresh-0' });
      assert.equal(client.getTokens()?.accessToken, 'access-1');
    });

    it('logout sends the stored access token in the body, no bearer, and forgets the tokens', async () => {
      await client.auth.login({ username: 'user@example.com', password: 'pw-123456' });
      await client.auth.logout();
      const logout = gw.requests[1]!;
      assert.deepEqual(logout.json, { jwtToken: 'access-0' });
      assert.equal(logout.headers.authorization, undefined);
      assert.equal(client.getTokens(), undefined);
      assert.deepEqual(saved.at(-1), undefined);
      await assert.rejects(client.auth.logout(), TypeError);
    });
  });
});
