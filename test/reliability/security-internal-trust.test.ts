import assert from 'node:assert/strict';
import { assertForwarding } from '@platform/service-kit';
import { eventually } from './support/ports.ts';
import { sendRaw } from './support/raw-http.ts';
import { CLIENT_KEY, type Stack, startStack } from './support/stack.ts';

/**
 * CONTRACT.md part 10 through the real stack: identity believes forwarded addresses and client key ids
 * only under the gateway's assertion, so a caller that reaches it directly cannot pick whose login
 * throttle it spends; and the gateway's metrics are on its management port only.
 */
describe('security: internal trust between the gateway and the services', function () {
  this.timeout(60_000);
  let stack: Stack;

  before(async () => {
    // A load balancer in front of the gateway (TRUSTED_PROXY_HOPS=1) lets the test speak from many addresses.
    stack = await startStack({ env: { LOGIN_FAILURES_PER_MIN: '3' }, gatewayEnv: { TRUSTED_PROXY_HOPS: '1' } });
  });
  after(async () => {
    await stack?.close();
  });

  const json = (body: unknown) => Buffer.from(JSON.stringify(body));
  /** A failed login straight to identity, claiming to come from `address` under `keyId`, as a forger would. */
  const directFailure = (address: string, extra: Record<string, string> = {}) =>
    sendRaw(
      stack.identityUrl,
      'POST',
      '/v1/auth/login',
      { 'content-type': 'application/json', 'x-forwarded-for': address, 'x-client-key-id': CLIENT_KEY.keyId, ...extra },
      json({ username: 'nobody@example.com', password: 'wrong-password-1' }),
    );

  /** The throttle counts in fixed minutes: start a counting test well inside one, so it cannot straddle two. */
  async function insideOneMinute(): Promise<void> {
    const intoMinuteMs = Date.now() % 60_000;
    if (intoMinuteMs > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinuteMs + 100));
  }

  it('when a direct caller claims a new address and the gateway\'s client key on every attempt, or forges the assertion, its own throttle still applies and the key\'s is not spent', async function () {
    this.timeout(90_000);
    await insideOneMinute();
    const user = await stack.identity.createUser();
    for (let i = 0; i < 3; i++) assert.equal((await directFailure(`198.51.100.${i}`)).status, 401);
    const fourth = await directFailure('198.51.100.99');
    assert.equal(fourth.status, 429, 'a new X-Forwarded-For let the direct caller past its throttle');
    assert.equal(fourth.json().message, 'Too many login attempts');

    // A forged assertion, or a genuine one for another request, is not believed either: were it, this
    // fresh address (and the client key, with no failure yet) would answer 401, not 429.
    const facts = { method: 'POST', target: '/v1/auth/login', forwardedFor: '192.0.2.1', forwardedProto: 'https', clientKeyId: CLIENT_KEY.keyId };
    const forged = assertForwarding('not-the-internal-assertion-key-0123456789', facts);
    const forAnother = assertForwarding(stack.identity.config.INTERNAL_ASSERTION_KEY, { ...facts, target: '/v1/auth/refresh' });
    for (const assertion of [forged, forAnother]) {
      const res = await directFailure('192.0.2.1', { 'x-forwarded-proto': 'https', 'x-internal-assertion': assertion });
      assert.equal(res.status, 429, assertion);
    }
    // Identity's lines reach its stdout within service-kit's LOG_HOLD_MS of being logged.
    const refusedLogged = () => Promise.resolve(stack.identity.log.lines().some((l) => l.msg === 'internal assertion refused: forwarded address and client key ignored'));
    assert.ok(await eventually(refusedLogged, 2000, 20), 'identity did not log the refused assertion');

    // Through the gateway, from an address of its own: the client key's allowance is untouched.
    const viaGateway = await stack.call('POST', '/v1/auth/login', {
      body: { username: user.username, password: user.password },
      headers: { 'x-forwarded-for': '203.0.113.50' },
    });
    assert.equal(viaGateway.status, 200, viaGateway.body.toString());
  });

  it('when /metrics is asked of the gateway\'s public port, answers 404; the management port serves it', async () => {
    const hidden = await sendRaw(stack.gatewayUrl, 'GET', '/metrics');
    assert.equal(hidden.status, 404);
    const metrics = await sendRaw(stack.gatewayManagementUrl, 'GET', '/metrics');
    assert.equal(metrics.status, 200);
    assert.match(metrics.body.toString(), /^http_requests_total\{/m);
    assert.equal((await sendRaw(stack.gatewayUrl, 'GET', '/health/live')).status, 200, 'health stays on the public port');
  });
});
