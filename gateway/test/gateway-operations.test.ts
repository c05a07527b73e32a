import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { startUpstream } from './support/fake-upstream.ts';
import { type Answer, type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { newNonce, signedHeaders } from './support/signing-client.ts';

const USER_ID = '3f1c2a4e-8b7d-4c6e-9a1f-2b3c4d5e6f70';

/** The error body of an answer, checked for the contract's shape; `messages` present exactly when `withMessages`. */
function errorOf(res: Answer, status: number, target: string, withMessages: boolean): Record<string, unknown> {
  assert.equal(res.status, status, res.body.toString());
  const body = res.json();
  assert.equal(body.status, status);
  assert.equal(typeof body.error, 'string');
  assert.equal(typeof body.message, 'string');
  assert.equal(body.path, target);
  if (withMessages) assert.deepEqual(body.messages, [body.message], `no messages on ${target}`);
  else assert.equal(body.messages, undefined);
  return body;
}

describe('gateway operation allow-list (CONTRACT.md part 8)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;
  let token: string;

  before(async () => {
    testRedis = await createTestRedis('gw-operations');
    gw = await startGateway({ redis: testRedis.redis });
    token = gw.issuer.sign();
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  const proxied = () => gw.identity.received.length + gw.risk.received.length;
  const body = Buffer.from('{"username":"a@example.com","password":"secret-1"}');
  const signed = (method: string, target: string, options: { body?: Buffer; bearer?: string } = {}) =>
    send(gw.url, method, target, signedHeaders(method, target, { key: gw.keys.hmac, ...options }), options.body);

  it('when a documented path is called with another method, answers 405 with Allow, with or without a body or token, and proxies nothing', async () => {
    const before = proxied();
    for (const [method, target, allow] of [
      ['PATCH', '/v1/auth/login', 'POST'],
      ['DELETE', '/v1/users/create', 'POST'],
      ['GET', '/v1/users/update', 'PATCH'],
      ['POST', `/v1/accounts/${USER_ID}`, 'GET'],
      ['PUT', '/v1/weather-stations/get-cities', 'GET'],
      ['HEAD', '/v1/weather-stations/get-cities', 'GET'],
      ['OPTIONS', '/v1/weather-stations/nearest', 'GET'],
      ['TRACE', '/v1/auth/refresh', 'POST'],
    ] as const) {
      for (const options of [{}, { body }, { bearer: token }, { body, bearer: token }]) {
        // Twice: the first call of a process must not be the only one that is handled well.
        for (let round = 0; round < 2; round++) {
          const res = await signed(method, target, options);
          // An answer to HEAD has no body to check.
          if (method === 'HEAD') assert.equal(res.status, 405);
          else errorOf(res, 405, target, target.startsWith('/v1/weather-stations/'));
          assert.equal(res.headers.allow, allow, `${method} ${target}`);
        }
      }
      // Unsigned, it is the same answer: the method is refused before any check.
      assert.equal((await send(gw.url, method, target, {}, body)).status, 405);
    }
    assert.equal(proxied(), before);
  });

  it('when the path is documented nowhere, answers 404 and proxies nothing, however it is spelled', async () => {
    const before = proxied();
    for (const target of [
      '/v1/weather-stations/unknown',
      '/v1/weather-stations/by/id',
      '/v1/weather-stations/by/id/1/more',
      '/v1/weather-stations/get-cities/',
      '/v1/weather-stations//get-cities',
      '/v1/weather-stations/get%2Dcities',
      '/V1/WEATHER-STATIONS/GET-CITIES',
      // `/v1/users` itself is an operation now (CONTRACT.md part 11): one segment too many is none.
      '/v1/users/unblock/x/y',
      '/v1/audit',
      '/v1/audit/events/x',
      '/v1/users/unblock/',
      '/v1/users//unblock/x',
      '/v1/auth',
      '/v1/authx/login',
      '/v1/unknown',
      // The gateway serves its own discovery documents (CONTRACT.md part 16), under these names only.
      '/.well-known/jwks.json/',
      '/.well-known/JWKS.json',
      '/.well-known/other',
    ]) {
      for (const method of ['GET', 'POST']) {
        const res = await signed(method, target, { body: method === 'POST' ? body : undefined, bearer: token });
        errorOf(res, 404, target, target.startsWith('/v1/weather-stations/'));
      }
    }
    assert.equal(proxied(), before);
  });

  it('decides per operation whether a token is needed: login and password-reset-request go without one, the rest not', async () => {
    assert.equal((await signed('POST', '/v1/auth/login', { body })).status, 200);
    assert.equal((await signed('POST', '/v1/users/password-reset-request', { body })).status, 200);
    assert.equal((await signed('POST', '/v1/users/create', { body })).status, 401);
    assert.equal((await signed('POST', '/v1/users/create', { body, bearer: token })).status, 200);
  });

  it('on station paths, every answer the gateway makes itself carries messages (CONTRACT.md part 7)', async () => {
    const stations = '/v1/weather-stations/get-cities';
    const byDistrict = '/v1/weather-stations/by/city-district';
    errorOf(await send(gw.url, 'GET', stations, {}), 400, stations, true);
    errorOf(await send(gw.url, 'GET', stations, { 'x-idempotency-key': 'k-unsigned' }), 401, stations, true);
    errorOf(await signed('GET', stations), 401, stations, true);
    const nonce = newNonce();
    await send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token, nonce }));
    errorOf(await send(gw.url, 'GET', stations, signedHeaders('GET', stations, { key: gw.keys.hmac, bearer: token, nonce })), 409, stations, true);
    const large = Buffer.alloc(102_401, 'a');
    errorOf(await signed('POST', byDistrict, { body: large, bearer: token }), 413, byDistrict, true);
    const gzipped = gzipSync(Buffer.from('{"city":"Ankara","district":"Çankaya"}'));
    const headers = { ...signedHeaders('POST', byDistrict, { key: gw.keys.hmac, bearer: token, body: gzipped }), 'content-encoding': 'gzip' };
    errorOf(await send(gw.url, 'POST', byDistrict, headers, gzipped), 415, byDistrict, true);
    // The identity paths keep the plain shape: `messages` only where there is more than the message to say.
    errorOf(await send(gw.url, 'POST', '/v1/auth/login', {}), 400, '/v1/auth/login', false);
  });

  it('on station paths, an upstream failure (502, 504) and an error body that is not JSON carry messages too', async () => {
    const risk = await startUpstream((req, res) => {
      if (req.url === '/v1/weather-stations/get-cities') res.writeHead(500, { 'content-type': 'text/html' }).end('<h1>oops</h1>');
      else setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('[]'), 1000);
    });
    const local = await startGateway({ redis: testRedis.redis, risk, env: { UPSTREAM_TIMEOUT_MS: '200' } });
    const down = await startGateway({ redis: testRedis.redis, env: { RISK_URL: 'http://127.0.0.1:9' } });
    try {
      const call = (g: TestGateway, target: string) => send(g.url, 'GET', target, signedHeaders('GET', target, { key: g.keys.hmac, bearer: g.issuer.sign() }));
      errorOf(await call(local, '/v1/weather-stations/get-cities'), 500, '/v1/weather-stations/get-cities', true);
      errorOf(await call(local, '/v1/weather-stations/by/id/1'), 504, '/v1/weather-stations/by/id/1', true);
      errorOf(await call(down, '/v1/weather-stations/by/id/1'), 502, '/v1/weather-stations/by/id/1', true);
    } finally {
      await Promise.all([local.close(), down.close()]);
      await risk.close();
    }
  });
});

describe('gateway operation allow-list, from the document it is given', () => {
  let testRedis: TestRedis;

  before(async () => {
    testRedis = await createTestRedis('gw-operations-doc');
  });
  after(async () => {
    await testRedis.close();
  });

  const respond = { responses: { '200': { description: 'ok' } } };
  const document = {
    openapi: '3.1.0',
    security: [{ bearerAuth: [] }],
    paths: {
      '/v1/users/{userId}': { get: { ...respond } },
      '/v1/users/create': { post: { ...respond } },
      '/v1/accounts/open': { get: { ...respond, security: [] }, post: { ...respond } },
      '/v1/accounts/optional': { post: { ...respond, security: [{}, { bearerAuth: [] }] } },
    },
  };

  it('a literal path wins over a template that also matches it; a template takes one segment only', async () => {
    const gw = await startGateway({ redis: testRedis.redis, apiDocument: document });
    try {
      const call = (method: string, target: string) => send(gw.url, method, target, signedHeaders(method, target, { key: gw.keys.hmac, bearer: gw.issuer.sign() }));
      const literal = await call('GET', '/v1/users/create');
      assert.equal(literal.status, 405);
      assert.equal(literal.headers.allow, 'POST');
      assert.equal((await call('GET', `/v1/users/${USER_ID}`)).status, 200);
      assert.equal(gw.identity.received.at(-1)?.url, `/v1/users/${USER_ID}`);
      assert.equal((await call('GET', `/v1/users/${USER_ID}/x`)).status, 404);
      assert.equal((await call('GET', '/v1/users/')).status, 404);
    } finally {
      await gw.close();
    }
  });

  it('the same path can be open under one method and need a token under another', async () => {
    const gw = await startGateway({ redis: testRedis.redis, apiDocument: document });
    try {
      const call = (method: string, target: string) => send(gw.url, method, target, signedHeaders(method, target, { key: gw.keys.hmac }));
      assert.equal((await call('GET', '/v1/accounts/open')).status, 200);
      const refused = await call('POST', '/v1/accounts/open');
      assert.equal(refused.status, 401);
      assert.equal(refused.json().message, 'Bad Credentials');
      assert.equal((await call('POST', '/v1/accounts/optional')).status, 200, 'a token that is optional is not required');
    } finally {
      await gw.close();
    }
  });

  it('refuses to build when the document names a path no upstream serves', async () => {
    await assert.rejects(startGateway({ redis: testRedis.redis, apiDocument: { openapi: '3.1.0', paths: { '/v1/elsewhere': { get: respond } } } }), /\/v1\/elsewhere, which no upstream serves/);
  });
});
