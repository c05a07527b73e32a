import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { signatureHeaders } from '../../gateway/test/support/signing-client.ts';
import { type Answer, sendRaw } from './support/raw-http.ts';
import { eventually } from './support/ports.ts';
import { CLIENT_KEY, type LoggedInUser, type Stack, startStack } from './support/stack.ts';

/** Headers every answer of every process carries. */
function assertSecurityHeaders(headers: IncomingHttpHeaders, where: string, cacheable = false): void {
  assert.equal(headers['x-content-type-options'], 'nosniff', where);
  assert.match(String(headers['content-security-policy']), /default-src 'none'/, where);
  assert.match(String(headers['content-security-policy']), /frame-ancestors 'none'/, where);
  assert.equal(headers['x-frame-options'], 'DENY', where);
  if (!cacheable) assert.match(String(headers['cache-control']), /no-store/, where);
  assert.equal(headers['x-powered-by'], undefined, where);
}

describe('the platform\'s surface: headers, CORS, logs', function () {
  this.timeout(60_000);
  let stack: Stack;
  let admin: LoggedInUser;

  before(async () => {
    stack = await startStack();
    admin = await stack.userWith(['ADMIN']);
  });
  after(async () => {
    await stack?.close();
  });

  describe('security headers', () => {
    it('when anything answers, at the gateway or at a service, success or error, the answer carries the security headers', async () => {
      const answers: Array<[string, Answer]> = [
        ['gateway live', await sendRaw(stack.gatewayUrl, 'GET', '/health/live')],
        ['gateway ready', await sendRaw(stack.gatewayUrl, 'GET', '/health/ready')],
        ['gateway metrics (management port)', await sendRaw(stack.gatewayManagementUrl, 'GET', '/metrics')],
        ['gateway metrics refused on the public port', await sendRaw(stack.gatewayUrl, 'GET', '/metrics')],
        ['gateway management 404', await sendRaw(stack.gatewayManagementUrl, 'GET', '/nowhere')],
        ['gateway docs', await sendRaw(stack.gatewayUrl, 'GET', '/docs')],
        ['gateway 404', await sendRaw(stack.gatewayUrl, 'GET', '/nowhere')],
        ['gateway 405', await sendRaw(stack.gatewayUrl, 'POST', '/health/live')],
        ['gateway 400 no idempotency key', await sendRaw(stack.gatewayUrl, 'GET', '/v1/weather-stations/get-cities')],
        ['gateway 401 bad signature', await sendRaw(stack.gatewayUrl, 'GET', '/v1/weather-stations/get-cities', { 'x-idempotency-key': 'k-1' })],
        ['proxied 200 identity', await stack.call('POST', '/v1/auth/login', { body: { username: admin.username, password: admin.password } })],
        ['proxied 401 identity', await stack.call('POST', '/v1/auth/login', { body: { username: admin.username, password: 'wrong-password' } })],
        ['proxied 200 risk', await stack.call('GET', '/v1/weather-stations/get-cities', { bearer: admin.accessToken })],
        ['proxied 404 risk', await stack.call('GET', '/v1/weather-stations/by/id/1', { bearer: admin.accessToken })],
        ['identity live', await sendRaw(stack.identityUrl, 'GET', '/health/live')],
        ['identity 401', await sendRaw(stack.identityUrl, 'GET', `/v1/accounts/${admin.id}`)],
        ['identity 404', await sendRaw(stack.identityUrl, 'GET', '/nowhere')],
        ['risk metrics', await sendRaw(stack.riskUrl, 'GET', '/metrics')],
        ['risk 401', await sendRaw(stack.riskUrl, 'GET', '/v1/weather-stations/get-cities')],
      ];
      // A station answer is cacheable by its client (CONTRACT.md part 17); every other answer is no-store.
      for (const [where, res] of answers) assertSecurityHeaders(res.headers, `${where} (${res.status})`, where === 'proxied 200 risk');
      assert.equal(answers.find(([where]) => where === 'proxied 200 risk')?.[1].headers['cache-control'], 'private, max-age=60');
      // The key set is public and meant to be cached by verifiers; the other headers still apply.
      assertSecurityHeaders((await sendRaw(stack.identityUrl, 'GET', '/.well-known/jwks.json')).headers, 'identity jwks', true);
    });
  });

  describe('CORS', () => {
    const preflight = (origin: string) =>
      sendRaw(stack.gatewayUrl, 'OPTIONS', '/v1/auth/login', { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'signature' });

    it('when the origin is configured, the preflight and the answer name exactly that origin, without credentials', async () => {
      const allowed = 'http://localhost:3000';
      const pre = await preflight(allowed);
      assert.equal(pre.status, 204);
      assert.equal(pre.headers['access-control-allow-origin'], allowed);
      assert.equal(pre.headers['access-control-allow-credentials'], undefined);
      const res = await stack.call('GET', '/v1/weather-stations/get-cities', { bearer: admin.accessToken, headers: { origin: allowed } });
      assert.equal(res.headers['access-control-allow-origin'], allowed);
      assert.match(String(res.headers.vary), /origin/i);
    });

    it('when the origin is not configured (or merely looks like one), no CORS header is given, on preflights or answers', async () => {
      for (const origin of ['https://evil.example', 'null', 'http://localhost:3000.evil.example', 'http://localhost:30000', 'HTTP://LOCALHOST:3000', 'http://localhost']) {
        const pre = await preflight(origin);
        assert.equal(pre.headers['access-control-allow-origin'], undefined, origin);
        assert.equal(pre.headers['access-control-allow-methods'], undefined, origin);
        const res = await stack.call('GET', '/v1/weather-stations/get-cities', { bearer: admin.accessToken, headers: { origin } });
        assert.equal(res.headers['access-control-allow-origin'], undefined, origin);
      }
    });

    it('when a service is called directly, it gives no CORS headers at all (only the gateway faces browsers)', async () => {
      for (const base of [stack.identityUrl, stack.riskUrl]) {
        const res = await sendRaw(base, 'GET', '/health/live', { origin: 'http://localhost:3000' });
        assert.equal(res.headers['access-control-allow-origin'], undefined);
      }
    });
  });

  describe('logs', () => {
    it('when a whole user journey ran, no password, token, code, signature or client secret is in any log', async () => {
      const user = await stack.userWith(['STANDARD_USER']);
      const secrets: string[] = [user.password, user.accessToken, user.refreshToken, (CLIENT_KEY as { secret: string }).secret];
      const refreshed = (await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } })).json();
      secrets.push(String(refreshed.accessToken), String(refreshed.refreshToken));
      await stack.call('POST', '/v1/auth/login', { body: { username: user.username, password: 'a-wrong-password-77' } });
      secrets.push('a-wrong-password-77');

      const account = (await stack.call('POST', '/v1/accounts/create', {
        bearer: String(refreshed.accessToken),
        body: { userId: user.id, type: 'INDIVIDUAL', subscriptionPlan: 'NONE', mobilePhoneNumber: '+905329876543' },
      })).json();
      await stack.call('POST', '/v1/accounts/phone-number-activation-request', {
        bearer: String(refreshed.accessToken),
        body: { userId: user.id, accountId: account.id, phoneNumberActivationPageLink: 'http://localhost:3000/activate' },
      });
      await stack.identity.sms.waitFor(1);
      const sms = stack.identity.sms.received.filter((r) => (r.body as { to: string }).to === '+905329876543').at(-1)!;
      const code = /\b(\d{6})\b/.exec((sms.body as { message: string }).message)![1]!;
      const activated = await stack.call('POST', '/v1/accounts/phone-number-activation', { bearer: String(refreshed.accessToken), body: { accountId: account.id, code } });
      assert.equal(activated.status, 200, activated.body.toString());

      const ticket = (await stack.call('POST', '/v1/users/password-reset-request', { bearer: admin.accessToken, body: { username: user.username } })).json();
      secrets.push(String(ticket.token), 'the-new-password-88');
      const reset = await stack.call('POST', '/v1/users/password-reset', { body: { userId: user.id, token: ticket.token, newPassword: 'the-new-password-88' } });
      assert.equal(reset.status, 200, reset.body.toString());
      const updated = await stack.call('PATCH', '/v1/users/update', { bearer: admin.accessToken, body: { userId: user.id, password: 'admin-set-password-99' } });
      assert.equal(updated.status, 200, updated.body.toString());
      secrets.push('admin-set-password-99');
      const signed = signatureHeaders({ method: 'GET', target: '/v1/x', headers: { 'x-idempotency-key': 'k' }, key: CLIENT_KEY });
      await sendRaw(stack.gatewayUrl, 'GET', '/v1/weather-stations/get-cities', { 'x-idempotency-key': 'k-logs', ...signed });
      secrets.push(signed.signature.slice('sig1=:'.length, -1));
      assert.equal((await stack.call('POST', '/v1/auth/logout', { body: { jwtToken: String(refreshed.accessToken) } })).status, 200);
      // Every line is read, the last request's included: they reach stdout within service-kit's LOG_HOLD_MS.
      const loggedLogout = (text: string) => text.includes('"url":"/v1/auth/logout"');
      assert.ok(await eventually(() => Promise.resolve(loggedLogout(stack.logs.gateway.text()) && loggedLogout(stack.identity.log.text())), 2000, 20), 'the logout was not logged');

      const logs = [stack.logs.gateway.text(), stack.logs.risk.text(), stack.identity.log.text()].join('\n');
      assert.ok(logs.includes('/v1/users/password-reset'), 'the logs were captured');
      for (const secret of secrets) assert.ok(!logs.includes(secret), `a secret reached the log: ${secret.slice(0, 10)}…`);
      assert.ok(!logs.includes(`"${code}"`) && !logs.includes((sms.body as { message: string }).message), 'the activation code reached the log');
      assert.ok(!/BEGIN [A-Z ]*PRIVATE KEY/.test(logs), 'a private key reached the log');
    });
  });
});
