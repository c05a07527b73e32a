import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type CaptureServer, startCaptureServer } from '../../services/identity/test/support/capture-server.ts';
import { sendRaw } from './support/raw-http.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';

/**
 * OWASP API Security Top 10 (2023) beyond identity's own (security-takeover.test.ts has API1, 2, 3, 5
 * and 6): API4 unrestricted resource consumption, API7 server-side request forgery, API8 security
 * misconfiguration, API9 improper inventory. Each through the real stack, asserting the secure behaviour.
 */
describe('security: OWASP API Top 10 (2023) across the platform, through the real stack', function () {
  this.timeout(120_000);
  let stack: Stack;
  let admin: LoggedInUser;
  let listener: CaptureServer;

  before(async () => {
    stack = await startStack();
    admin = await stack.userWith(['ADMIN']);
    listener = await startCaptureServer();
  });
  after(async () => {
    await listener?.close();
    await stack?.close();
  });

  describe('API4 unrestricted resource consumption', () => {
    it('when a request asks for more than the documented bounds, a body over 100 kB or a deeply nested one, answers 400 or 413 and serves on', async () => {
      for (const target of ['/v1/weather-stations/nearest?latitude=40&longitude=30&limit=1000000', '/v1/weather-stations/nearest?latitude=40&longitude=30&limit=1e400']) {
        assert.equal((await stack.call('GET', target, { bearer: admin.accessToken })).status, 400, target);
      }
      const byDistrict = '/v1/weather-stations/by/city-district';
      assert.equal((await stack.call('POST', byDistrict, { bearer: admin.accessToken, body: { city: 'Ankara', district: 'Çankaya', limit: 100_000 } })).status, 400);
      const big = Buffer.from(JSON.stringify({ city: 'A'.repeat(110_000), district: 'B' }));
      assert.equal((await stack.call('POST', byDistrict, { bearer: admin.accessToken, body: big })).status, 413);
      const deep = Buffer.from(`${'['.repeat(20_000)}${']'.repeat(20_000)}`);
      assert.equal((await stack.call('POST', byDistrict, { bearer: admin.accessToken, body: deep })).status, 400);
      const ok = await stack.call('POST', byDistrict, { bearer: admin.accessToken, body: { city: 'Ankara', district: 'Çankaya', limit: 1000 } });
      assert.equal(ok.status, 200);
      assert.ok((ok.json() as unknown as unknown[]).length <= 1000);
    });
  });

  describe('API7 server-side request forgery', () => {
    it('when a user gives URLs of internal hosts (a profile picture, reset and activation page links), the platform never fetches them', async () => {
      const internal = `${listener.url}/latest/meta-data/iam`;
      const user = await stack.userWith(['STANDARD_USER']);
      const account = await stack.call('POST', '/v1/accounts/create', {
        bearer: user.accessToken,
        body: { userId: user.id, type: 'INDIVIDUAL', profilePictureUrl: internal, mobilePhoneNumber: '+905321234567' },
      });
      assert.equal(account.status, 201, account.body.toString());
      const reset = await stack.call('POST', '/v1/users/password-reset-request', { body: { username: user.username, resetPageLink: internal } });
      assert.equal(reset.status, 400, 'a reset page link off the allow-list is refused, not mailed or fetched');
      const activation = await stack.call('POST', '/v1/accounts/phone-number-activation-request', {
        bearer: user.accessToken,
        body: { userId: user.id, accountId: account.json().id, phoneNumberActivationPageLink: internal },
      });
      assert.equal(activation.status, 400, activation.body.toString());
      const read = await stack.call('GET', `/v1/accounts/${user.id}`, { bearer: user.accessToken });
      assert.equal(read.json().profilePictureUrl, internal, 'stored as given, for the client to show');
      await sleep(200);
      assert.equal(listener.received.length, 0, 'something fetched a URL a user gave');
    });
  });

  describe('API8 security misconfiguration', () => {
    it('when anything fails, no answer carries a stack trace, SQL, a library name or a server banner', async () => {
      const answers = [
        await stack.call('POST', '/v1/users/create', { bearer: admin.accessToken, body: Buffer.from('{"username": "x@example.com", ') }),
        await stack.call('GET', `/v1/accounts/${randomUUID()}'--`, { bearer: admin.accessToken }),
        await stack.call('TRACE', '/v1/auth/login'),
        await sendRaw(stack.identityUrl, 'POST', '/v1/auth/login', { 'content-type': 'application/json' }, Buffer.from('{"username":')),
        await sendRaw(stack.riskUrl, 'DELETE', '/v1/weather-stations/get-cities', { 'content-type': 'application/json' }, Buffer.from('{}')),
      ];
      for (const res of answers) {
        const text = res.body.toString();
        assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${text}`);
        assert.doesNotMatch(text, /\bat \S+ \(|node_modules|SELECT |INSERT |syntax error|Express|express-openapi-validator|ajv/i, text);
        for (const header of ['x-powered-by', 'server']) assert.equal(res.headers[header], undefined, header);
      }
    });

    it('when asked for the gateway\'s metrics through the public port, answers 404; the key set it publishes there holds public keys only', async () => {
      assert.equal((await sendRaw(stack.gatewayUrl, 'GET', '/metrics')).status, 404);
      // The gateway's own JWKS (CONTRACT.md part 16), not identity's proxied: the keys it verifies tokens with.
      const jwks = await sendRaw(stack.gatewayUrl, 'GET', '/.well-known/jwks.json');
      assert.equal(jwks.status, 200);
      const { keys } = jwks.json() as { keys: Array<Record<string, unknown>> };
      assert.ok(keys.length > 0);
      for (const key of keys) for (const part of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) assert.equal(part in key, false, `${String(key.kid)} carries ${part}`);
    });
  });

  describe('API9 improper inventory management', () => {
    it('when a caller tries an undocumented operation (another method, a path beside a documented one), nothing is proxied', async () => {
      const upstreamCalls = async () => {
        const text = (await sendRaw(stack.gatewayManagementUrl, 'GET', '/metrics')).body.toString();
        return [...text.matchAll(/^gateway_upstream_duration_seconds_count\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
      };
      const before = await upstreamCalls();
      for (const [method, target] of [
        ['DELETE', `/v1/users/unblock/${admin.id}`],
        ['PUT', '/v1/accounts/update'],
        ['GET', '/v1/users/create/../unblock'],
        ['POST', '/v1/internal/users'],
        ['GET', '/v2/weather-stations/get-cities'],
      ] as const) {
        const res = await stack.call(method, target, { bearer: admin.accessToken, body: method === 'GET' ? undefined : {} });
        assert.ok(res.status === 404 || res.status === 405, `${method} ${target} → ${res.status}`);
      }
      assert.equal(await upstreamCalls(), before, 'an undocumented operation reached a service');
      assert.equal((await stack.call('GET', '/v1/weather-stations/get-cities', { bearer: admin.accessToken })).status, 200);
      assert.equal(await upstreamCalls(), before + 1, 'the control request was not counted');
    });
  });
});
