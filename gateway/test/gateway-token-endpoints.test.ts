import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { loadApiDocumentFor } from '../src/docs/load-api-document.ts';
import { gatewayConfigSpec } from '../src/config.ts';
import { operationTable } from '../src/proxy/operation-table.ts';
import { upstreamRoutes } from '../src/proxy/routes.ts';
import { loadConfig } from '@platform/service-kit';
import { type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { signedHeaders } from './support/signing-client.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

/**
 * CONTRACT.md part 16 at the gateway: a bearer token bound to a client key (`cnf.kid`) is refused under any
 * other key's signature, at every operation that takes one; only keys marked `"introspection": true` reach
 * the introspection endpoint. The harness's Ed25519 key is such a resource server's key; its HMAC key is not.
 */
describe('gateway: tokens bound to their client key, the introspection key (CONTRACT.md part 16)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;

  before(async () => {
    testRedis = await createTestRedis('gw-token-endpoints');
    gw = await startGateway({ redis: testRedis.redis });
  });
  after(async () => {
    await gw?.close();
    await testRedis?.close();
  });

  const cities = '/v1/weather-stations/get-cities';
  const reached = () => gw.identity.received.length + gw.risk.received.length;
  const metric = async (reason: string): Promise<number> => {
    const text = await (await fetch(`${gw.managementUrl}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('gateway_rejected_requests_total{') && l.includes(`reason="${reason}"`));
    return Number(line?.split(' ').at(-1) ?? 0);
  };

  it('forwards a bound token under its own key, and an unbound one under any key', async () => {
    const bound = gw.issuer.sign({ cnf: { kid: gw.keys.hmac.keyId } });
    const unbound = gw.issuer.sign();
    for (const [key, token] of [
      [gw.keys.hmac, bound],
      [gw.keys.hmac, unbound],
      [gw.keys.ed25519, unbound],
    ] as const) {
      const res = await send(gw.url, 'GET', cities, signedHeaders('GET', cities, { key, bearer: token }));
      assert.equal(res.status, 200, res.body.toString());
    }
  });

  it('refuses a token bound to another key with 401 Token bound to another client, at every operation that takes a bearer token, reaching no upstream', async () => {
    const config = loadConfig(gatewayConfigSpec, { APP_ENV: 'local' });
    const table = operationTable(await loadApiDocumentFor(config), Object.values(upstreamRoutes({ identity: config.IDENTITY_URL, risk: config.RISK_URL })));
    // A token optional or required: an ADMIN's token on the password reset request is checked as any other.
    const bearerOperations = table.operations.filter((operation) => operation.acceptsBearer);
    assert.ok(bearerOperations.length >= 15, `only ${bearerOperations.length} operations take a bearer token`);
    assert.ok(
      bearerOperations.some((operation) => !operation.needsBearer && operation.template === '/v1/users/password-reset-request'),
      'the password reset request, whose token is optional, is not among them',
    );
    const stolen = gw.issuer.sign({ cnf: { kid: gw.keys.hmac.keyId }, roles: ['ADMIN'], aal: 2 });
    const before = { reached: reached(), counted: await metric('token-binding') };
    for (const operation of bearerOperations) {
      const target = operation.template.replace(/\{[^}]+\}/g, randomUUID());
      const body = ['POST', 'PATCH', 'PUT'].includes(operation.method) ? Buffer.from('{}') : undefined;
      const res = await send(gw.url, operation.method, target, signedHeaders(operation.method, target, { key: gw.keys.ed25519, bearer: stolen, body }), body);
      assert.equal(res.status, 401, `${operation.method} ${operation.template}: ${res.body.toString()}`);
      assert.equal(res.json().message, 'Token bound to another client', `${operation.method} ${operation.template}`);
    }
    assert.equal(reached(), before.reached, 'a refused request reached an upstream');
    assert.equal(await metric('token-binding'), before.counted + bearerOperations.length);
  });

  it('refuses a token whose cnf names no key as Bad Credentials', async () => {
    for (const cnf of [{}, { kid: '' }, { kid: 7 }, 'test-hmac', null]) {
      const res = await send(gw.url, 'GET', cities, signedHeaders('GET', cities, { key: gw.keys.hmac, bearer: gw.issuer.sign({ cnf }) }));
      assert.equal(res.status, 401, JSON.stringify(cnf));
      assert.equal(res.json().message, 'Bad Credentials');
    }
  });

  it('with TOKEN_BINDING=off, accepts a bound token under any key', async () => {
    const local = await startGateway({ redis: testRedis.redis, env: { TOKEN_BINDING: 'off' } });
    try {
      const token = local.issuer.sign({ cnf: { kid: local.keys.hmac.keyId } });
      const res = await send(local.url, 'GET', cities, signedHeaders('GET', cities, { key: local.keys.ed25519, bearer: token }));
      assert.equal(res.status, 200, res.body.toString());
    } finally {
      await local.close();
    }
  });

  it('lets only a key marked "introspection": true reach POST /v1/auth/introspect; any key reaches POST /v1/auth/revoke', async () => {
    const body = Buffer.from(`token=${gw.issuer.sign()}`);
    const call = (path: string, key: typeof gw.keys.hmac | typeof gw.keys.ed25519) =>
      send(gw.url, 'POST', path, signedHeaders('POST', path, { key, body, headers: FORM }), body);
    const before = { identity: gw.identity.received.length, counted: await metric('introspection-key') };
    const refused = await call('/v1/auth/introspect', gw.keys.hmac);
    assert.equal(refused.status, 403);
    assert.equal(refused.json().message, 'This client key may not introspect tokens');
    assert.equal(gw.identity.received.length, before.identity, 'the refused introspection reached identity');
    assert.equal(await metric('introspection-key'), before.counted + 1);
    // Refused after admission, as every verified key's request: counted (its RateLimit headers), its nonce spent.
    assert.match(String(refused.headers.ratelimit), /;r=\d+;t=\d+$/, 'the 403 was not counted against the key');
    const headers = signedHeaders('POST', '/v1/auth/introspect', { key: gw.keys.hmac, body, headers: FORM });
    assert.equal((await send(gw.url, 'POST', '/v1/auth/introspect', headers, body)).status, 403);
    const replay = await send(gw.url, 'POST', '/v1/auth/introspect', headers, body);
    assert.equal(replay.status, 409, 'a refused introspection can be replayed');
    assert.equal(replay.json().message, 'Replay attack detected (nonce reused)');
    assert.equal((await call('/v1/auth/introspect', gw.keys.ed25519)).status, 200);
    assert.equal((await call('/v1/auth/revoke', gw.keys.hmac)).status, 200);
    const forwarded = gw.identity.received.slice(before.identity);
    assert.deepEqual(
      forwarded.map((req) => [req.url, req.headers['x-client-key-id'], req.headers['content-type']]),
      [
        ['/v1/auth/introspect', gw.keys.ed25519.keyId, FORM['content-type']],
        ['/v1/auth/revoke', gw.keys.hmac.keyId, FORM['content-type']],
      ],
    );
  });

  it('refuses an unsigned or badly signed introspection with 401 before asking which key it is', async () => {
    const body = Buffer.from('token=x');
    const unsigned = await send(gw.url, 'POST', '/v1/auth/introspect', { ...FORM, 'x-idempotency-key': randomUUID() }, body);
    assert.equal(unsigned.status, 401);
    assert.equal(unsigned.json().message, 'Invalid request signature');
  });
});
