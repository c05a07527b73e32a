import assert from 'node:assert/strict';
import { IncomingMessage, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { gatewayDeadline } from '@platform/service-kit';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { serviceDeadline } from '../src/proxy/forward.step.ts';
import { startUpstream } from './support/fake-upstream.ts';
import { type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { signedHeaders } from './support/signing-client.ts';

/** A well-formed user id for the path parameters of the documented operations. */
const USER_ID = '3f1c2a4e-8b7d-4c6e-9a1f-2b3c4d5e6f70';

describe('gateway routing and proxying (CONTRACT.md part 1)', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;
  let token: string;

  before(async () => {
    testRedis = await createTestRedis('gw-proxy');
    gw = await startGateway({ redis: testRedis.redis });
    token = gw.issuer.sign();
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  /** Writes raw bytes to the gateway and returns everything read until it closes the connection. */
  const exchange = (bytes: string | Buffer) =>
    new Promise<string>((resolve) => {
      const { port } = new URL(gw.url);
      let read = '';
      const socket = connect({ port: Number(port), host: '127.0.0.1' }, () => socket.write(bytes));
      socket.on('data', (data: Buffer) => (read += data.toString('latin1')));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(read));
    });

  const signed = (method: string, target: string, options: { body?: Buffer; headers?: Record<string, string> } = {}) =>
    send(gw.url, method, target, signedHeaders(method, target, { key: gw.keys.hmac, bearer: token, ...options }), options.body);

  it('routes /v1/auth, /v1/users and /v1/accounts to identity and /v1/weather-stations to risk, whatever the Host', async () => {
    const body = Buffer.from('{}');
    for (const [method, target, upstream] of [
      ['PATCH', '/v1/users/update', gw.identity],
      ['GET', `/v1/accounts/${USER_ID}`, gw.identity],
      ['POST', '/v1/auth/refresh', gw.identity],
      ['GET', '/v1/weather-stations/by/id/17130', gw.risk],
    ] as const) {
      const res = await signed(method, target, { headers: { host: 'risk.example.com' }, ...(method === 'GET' ? {} : { body }) });
      assert.equal(res.status, 200, target);
      assert.equal(upstream.received.at(-1)?.url, target);
    }
  });

  it('when the path belongs to no upstream, answers 404 and proxies nothing', async () => {
    const before = gw.identity.received.length + gw.risk.received.length;
    for (const target of ['/v1/unknown', '/v1/authx', '/V1/AUTH/LOGIN', '/.well-known/other']) {
      const res = await signed('GET', target);
      assert.equal(res.status, 404, target);
      assert.equal(res.json().error, 'Not Found');
    }
    assert.equal(gw.identity.received.length + gw.risk.received.length, before);
  });

  it('forwards the body bytes unchanged, allow-listed headers only, and sets its own X-Request-Id and X-Forwarded-*', async () => {
    const body = Buffer.from('{"city":"Şanlıurfa",  "district":"Halfeti"}\n');
    const res = await signed('POST', '/v1/weather-stations/by/city-district', {
      body,
      headers: {
        host: 'api.example.com',
        'x-request-id': 'req-forward-1',
        'x-forwarded-for': '6.6.6.6',
        'x-client-key-id': 'forged',
        cookie: 'session=1',
        'x-internal': 'secret',
        'accept-language': 'tr-TR',
      },
    });
    assert.equal(res.status, 200, res.body.toString());
    const received = gw.risk.received.at(-1)!;
    assert.ok(received.body.equals(body));
    assert.equal(received.headers['content-length'], String(body.length));
    assert.equal(received.headers['content-type'], 'application/json');
    assert.equal(received.headers['accept-language'], 'tr-TR');
    assert.equal(received.headers.authorization, `Bearer ${token}`);
    // The gateway's own id, the one it answers with; the client's is neither forwarded nor echoed.
    assert.match(String(received.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.equal(received.headers['x-request-id'], res.headers['x-request-id']);
    assert.equal(received.headers['x-forwarded-for'], '127.0.0.1', 'a client-sent X-Forwarded-For is not believed');
    assert.equal(received.headers['x-forwarded-proto'], 'http');
    // The client's Host is not under the internal assertion: it is not passed on at all.
    assert.equal(received.headers['x-forwarded-host'], undefined);
    assert.equal(received.headers['x-client-key-id'], gw.keys.hmac.keyId);
    for (const dropped of ['cookie', 'x-internal', 'signature', 'signature-input', 'content-digest', 'transfer-encoding']) {
      assert.equal(received.headers[dropped], undefined, `${dropped} reached the upstream`);
    }
    assert.notEqual(res.headers['x-request-id'], 'req-forward-1');
  });

  it('tells the upstream under its assertion when it must have answered by (d: a margin before the gateway\'s 504), which a service believes', async () => {
    const before = Date.now();
    const res = await signed('POST', '/v1/weather-stations/by/city-district', { body: Buffer.from('{"city":"Adana","district":"Seyhan"}') });
    const after = Date.now();
    assert.equal(res.status, 200, res.body.toString());
    const received = gw.risk.received.at(-1)!;
    const deadline = Number(/;d=(\d+);/.exec(String(received.headers['x-internal-assertion']))?.[1]);
    const timeout = gw.config.UPSTREAM_TIMEOUT_MS;
    assert.ok(deadline >= serviceDeadline(before, timeout) && deadline <= serviceDeadline(after, timeout), `d=${deadline}, sent between ${before} and ${after}`);
    // What the service makes of it: the request as it arrived (its target and headers), under the shared key.
    const arrived = Object.assign(Object.create(IncomingMessage.prototype) as IncomingMessage, { method: 'POST', url: received.url, headers: received.headers });
    assert.equal(gatewayDeadline(gw.config.INTERNAL_ASSERTION_KEY)(arrived), deadline);
  });

  it('needs the answer a fifth of UPSTREAM_TIMEOUT_MS before its 504, at most 1 s before', () => {
    assert.deepEqual([10_000, 3000, 1500, 100].map((timeout) => serviceDeadline(0, timeout)), [9000, 2400, 1200, 80]);
  });

  it('returns only allow-listed upstream response headers', async () => {
    const res = await signed('GET', '/v1/weather-stations/get-cities');
    assert.equal(res.status, 200);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.match(String(res.headers['content-type']), /^application\/json/);
    for (const dropped of ['x-powered-by', 'set-cookie', 'x-internal-trace']) assert.equal(res.headers[dropped], undefined, dropped);
  });

  it('passes the upstream error body through, and re-shapes one that is not JSON', async () => {
    const identity = await startUpstream((req, res) => {
      if (req.url === `/v1/users/unblock/${USER_ID}`) res.writeHead(503, { 'content-type': 'text/html' }).end('<html><body>Service Unavailable</body></html>');
      else res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ timestamp: '2025-01-01T00:00:00.000Z', status: 404, error: 'Not Found', message: 'User not found', path: req.url }));
    });
    const local = await startGateway({ redis: testRedis.redis, identity });
    try {
      const localToken = local.issuer.sign();
      const account = `/v1/accounts/${USER_ID}`;
      const json = await send(local.url, 'GET', account, signedHeaders('GET', account, { key: local.keys.hmac, bearer: localToken }));
      assert.equal(json.status, 404);
      assert.equal(json.json().message, 'User not found');
      const unblock = `/v1/users/unblock/${USER_ID}`;
      const html = await send(local.url, 'GET', unblock, signedHeaders('GET', unblock, { key: local.keys.hmac, bearer: localToken }));
      assert.equal(html.status, 503);
      assert.equal(html.headers['retry-after'], '1', 'an upstream 503 without Retry-After gets the gateway\'s');
      assert.deepEqual(html.json(), { timestamp: html.json().timestamp, status: 503, error: 'Service Unavailable', message: 'Service Unavailable', path: unblock });
    } finally {
      await local.close();
      await identity.close();
    }
  });

  it('when the upstream is down, answers 502 in the error shape', async () => {
    const local = await startGateway({ redis: testRedis.redis, identityDown: true });
    try {
      const idempotencyKey = 'retry-after-502';
      const res = await send(local.url, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: local.keys.hmac, body: Buffer.from('{}'), idempotencyKey }), Buffer.from('{}'));
      assert.equal(res.status, 502);
      assert.deepEqual(res.json(), { timestamp: res.json().timestamp, status: 502, error: 'Bad Gateway', message: 'Upstream service unavailable', path: '/v1/auth/login' });
      const retry = await send(local.url, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: local.keys.hmac, body: Buffer.from('{}'), idempotencyKey }), Buffer.from('{}'));
      assert.equal(retry.status, 502, 'the key was released, so the retry is not a 409');
    } finally {
      await local.close();
    }
  });

  it('when the upstream is slower than UPSTREAM_TIMEOUT_MS, answers 504', async () => {
    const identity = await startUpstream((_req, res) => {
      setTimeout(() => res.writeHead(200).end('{}'), 1500);
    });
    const local = await startGateway({ redis: testRedis.redis, identity, env: { UPSTREAM_TIMEOUT_MS: '200' } });
    try {
      const started = Date.now();
      const res = await send(local.url, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: local.keys.hmac, body: Buffer.from('{}') }), Buffer.from('{}'));
      assert.equal(res.status, 504);
      assert.equal(res.json().message, 'Upstream service timed out');
      assert.ok(Date.now() - started < 1000);
      assert.equal(identity.received.length, 1);
    } finally {
      await local.close();
      await identity.close();
    }
  });

  it('when the body is over GATEWAY_BODY_LIMIT_BYTES, answers 413 and proxies nothing', async () => {
    const body = Buffer.alloc(102_401, 'a');
    const before = gw.identity.received.length;
    const res = await send(gw.url, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: gw.keys.hmac, body }), body);
    assert.equal(res.status, 413);
    assert.equal(res.json().error, 'Payload Too Large');
    assert.equal(gw.identity.received.length, before);
    const atLimit = Buffer.alloc(102_400, 'a');
    assert.equal((await send(gw.url, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: gw.keys.hmac, body: atLimit }), atLimit)).status, 200);
  });

  it('when the body comes in chunks, forwards the same bytes with their length; past the limit in chunks, 413 and nothing proxied', async () => {
    const body = Buffer.from(JSON.stringify({ username: 'a@example.com', password: 'p'.repeat(5000) }));
    const headers = { ...signedHeaders('POST', '/v1/auth/login', { key: gw.keys.hmac, body }), 'transfer-encoding': 'chunked' };
    assert.equal((await send(gw.url, 'POST', '/v1/auth/login', headers, body)).status, 200);
    const received = gw.identity.received.at(-1)!;
    assert.ok(received.body.equals(body));
    assert.equal(received.headers['content-length'], String(body.length));
    const before = gw.identity.received.length;
    const big = Buffer.alloc(102_401, 'a');
    const refused = await send(gw.url, 'POST', '/v1/auth/login', { ...signedHeaders('POST', '/v1/auth/login', { key: gw.keys.hmac, body: big }), 'transfer-encoding': 'chunked' }, big);
    assert.equal(refused.status, 413);
    assert.equal(refused.headers.connection, 'close');
    assert.equal(gw.identity.received.length, before);
  });

  it('after an early 413, reads and drops what the client still sends (so it reads the 413), and closes within the linger even if the client never stops', async () => {
    const headers = signedHeaders('POST', '/v1/auth/login', { key: gw.keys.hmac, body: Buffer.from('{}') });
    for (const framing of [{ 'content-length': String(50 * 1024 * 1024) }, { 'transfer-encoding': 'chunked' }]) {
      const { port } = new URL(gw.url);
      const started = performance.now();
      const outcome = await new Promise<{ text: string; closedAfterMs: number }>((resolve) => {
        let text = '';
        // Half-open allowed: the client goes on sending after the gateway's FIN, until the gateway closes.
        const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true }, () => {
          const head = Object.entries({ ...headers, ...framing, host: 'x' }).map(([name, value]) => `${name}: ${value}\r\n`);
          socket.write(`POST /v1/auth/login HTTP/1.1\r\n${head.join('')}\r\n`);
          // A client that never stops: a chunk every 10 ms, as long as the socket takes it.
          const chunk = framing['transfer-encoding'] === undefined ? Buffer.alloc(64 * 1024, 'a') : Buffer.from(`10000\r\n${'a'.repeat(0x10000)}\r\n`);
          const timer = setInterval(() => socket.writable && socket.write(chunk), 10);
          socket.on('close', () => {
            clearInterval(timer);
            resolve({ text, closedAfterMs: performance.now() - started });
          });
        });
        socket.on('data', (data: Buffer) => (text += data.toString('latin1')));
        socket.on('error', () => undefined);
      });
      assert.match(outcome.text, /^HTTP\/1\.1 413 /, JSON.stringify(framing));
      // It lingered (2 s) rather than reset the connection at once, and no longer.
      assert.ok(outcome.closedAfterMs > 1500 && outcome.closedAfterMs < 4000, `closed after ${Math.round(outcome.closedAfterMs)} ms`);
    }
  });

  it('a request pipelined behind a 413 (its whole body sent) neither runs nor is answered: the 413 closes the connection (RFC 9112 section 9.6)', async () => {
    const big = Buffer.alloc(102_401, 'a');
    const small = Buffer.from('{"username":"a@example.com","password":"secret-1"}');
    const wire = (body: Buffer) => {
      const head = Object.entries({ ...signedHeaders('POST', '/v1/auth/login', { key: gw.keys.hmac, body }), 'content-length': String(body.length), host: 'x' });
      return Buffer.concat([Buffer.from(`POST /v1/auth/login HTTP/1.1\r\n${head.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`), body]);
    };
    const before = gw.identity.received.length;
    const text = await exchange(Buffer.concat([wire(big), wire(small)]));
    assert.deepEqual(text.match(/HTTP\/1\.1 \d{3} /g), ['HTTP/1.1 413 '], text);
    // Time for a request that did run to reach the upstream (its admission, its forwarding).
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(gw.identity.received.length, before, 'the request behind the 413 was proxied');
  });

  it('a request asking to upgrade the protocol is forwarded without Upgrade and answered with Connection: close; a request pipelined behind it does not run', async () => {
    const target = '/v1/weather-stations/by/id/17130';
    const wire = (extra: Record<string, string>) =>
      `GET ${target} HTTP/1.1\r\n${Object.entries({ ...signedHeaders('GET', target, { key: gw.keys.hmac, bearer: token }), host: 'x', ...extra })
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}\r\n`;
    const before = gw.risk.received.length;
    const started = performance.now();
    const text = await exchange(wire({ connection: 'Upgrade', upgrade: 'websocket' }) + wire({}));
    assert.deepEqual(text.match(/HTTP\/1\.1 \d{3} /g), ['HTTP/1.1 200 '], text);
    assert.match(text, /\r\nConnection: close\r\n/i);
    assert.ok(performance.now() - started < 2000, 'the connection waited for the keep-alive timeout');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(gw.risk.received.length, before + 1);
    assert.equal(gw.risk.received.at(-1)?.headers.upgrade, undefined);
  });

  it('a signed request whose target is in absolute form (RFC 9112 section 3.2.2) is verified and forwarded as its path and query', async () => {
    const target = '/v1/weather-stations/by/id/17130';
    const head = Object.entries({ ...signedHeaders('GET', target, { key: gw.keys.hmac, bearer: token }), host: 'api.example.com', connection: 'close' });
    const text = await exchange(`GET http://api.example.com${target} HTTP/1.1\r\n${head.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`);
    assert.match(text, /^HTTP\/1\.1 200 /, text);
    assert.equal(gw.risk.received.at(-1)?.url, target);
  });

  it('when the client hangs up in the middle of its body, proxies nothing, holds no key, and serves on', async () => {
    const body = Buffer.from('{"username":"a@example.com","password":"secret-1"}');
    const idempotencyKey = 'abandoned-body-1';
    const headers = signedHeaders('POST', '/v1/auth/login', { key: gw.keys.hmac, body, idempotencyKey });
    const before = gw.identity.received.length;
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${gw.url}/v1/auth/login`, { method: 'POST', agent: false, headers });
      req.on('error', () => resolve());
      req.on('close', () => resolve());
      req.write(body.subarray(0, 10), () => setTimeout(() => req.destroy(), 50));
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(gw.identity.received.length, before);
    // The key was never claimed (the body came before admission): the whole request, sent again, passes.
    assert.equal((await send(gw.url, 'POST', '/v1/auth/login', headers, body)).status, 200);
  });

  it('serves /health/live, /health/ready itself, /metrics on the management port, unsigned, and counts rejections', async () => {
    const before = gw.identity.received.length + gw.risk.received.length;
    assert.equal((await send(gw.url, 'GET', '/health/live')).status, 200);
    assert.equal((await send(gw.url, 'GET', '/health/ready')).status, 200);
    await send(gw.url, 'PATCH', '/v1/users/update', { 'x-idempotency-key': 'k1' });
    await send(gw.url, 'GET', '/v1/users/update', { 'x-idempotency-key': 'k2' });
    await send(gw.url, 'GET', '/v1/users/nothing', { 'x-idempotency-key': 'k3' });
    assert.equal((await send(gw.url, 'GET', '/metrics')).status, 404, 'metrics are on the management port only');
    const metrics = await send(gw.managementUrl, 'GET', '/metrics');
    assert.equal(metrics.status, 200);
    const text = metrics.body.toString();
    for (const reason of ['signature', 'method-not-allowed', 'unknown-operation']) {
      assert.match(text, new RegExp(`^gateway_rejected_requests_total\\{.*reason="${reason}".*\\} [1-9]`, 'm'), reason);
    }
    assert.match(text, /^gateway_upstream_duration_seconds_count\{.*upstream="risk",outcome="200".*\} [1-9]/m);
    // Labelled by the documented operation, a 405 by its path template too.
    assert.match(text, /^http_requests_total\{method="PATCH",route="\/v1\/users\/update",status="401".*\} [1-9]/m);
    assert.match(text, /^http_requests_total\{method="GET",route="\/v1\/users\/update",status="405".*\} [1-9]/m);
    assert.match(text, /^http_requests_total\{method="GET",route="unmatched",status="404".*\} [1-9]/m);
    assert.equal(gw.identity.received.length + gw.risk.received.length, before);
  });
});

describe('gateway CORS', () => {
  let testRedis: TestRedis;
  let gw: TestGateway;

  before(async () => {
    testRedis = await createTestRedis('gw-cors');
    gw = await startGateway({ redis: testRedis.redis, env: { CORS_ORIGINS: 'https://app.example.com' } });
  });
  after(async () => {
    await gw.close();
    await testRedis.close();
  });

  it('answers a preflight from an allowed origin with 204 and the signing headers, unsigned', async () => {
    const res = await send(gw.url, 'OPTIONS', '/v1/auth/login', { origin: 'https://app.example.com', 'access-control-request-method': 'POST' });
    assert.equal(res.status, 204);
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.match(String(res.headers['access-control-allow-headers']), /Signature-Input/);
    assert.match(String(res.headers['access-control-allow-headers']), /X-Idempotency-Key/);
    assert.match(String(res.headers['access-control-allow-headers']), /traceparent/);
    // A revalidation's conditional headers (CONTRACT.md part 17).
    assert.match(String(res.headers['access-control-allow-headers']), /If-None-Match, If-Modified-Since/);
    assert.equal(gw.identity.received.length, 0);
  });

  it('gives another origin no CORS headers, and marks every answer Vary: Origin', async () => {
    const res = await send(gw.url, 'OPTIONS', '/v1/auth/login', { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' });
    assert.equal(res.status, 204);
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    assert.equal(res.headers.vary, 'Origin');
  });

  it('adds the CORS headers to API answers, errors included', async () => {
    const res = await send(gw.url, 'POST', '/v1/auth/login', { origin: 'https://app.example.com' });
    assert.equal(res.status, 400);
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.match(String(res.headers['access-control-expose-headers']), /X-Request-Id/);
    // A browser client reads its quota (CONTRACT.md part 12).
    assert.match(String(res.headers['access-control-expose-headers']), /RateLimit-Policy, RateLimit\b/);
    // The validator the SDK keeps, and the cache's fields (CONTRACT.md part 17).
    assert.match(String(res.headers['access-control-expose-headers']), /ETag, Age, X-Cache/);
  });
});
