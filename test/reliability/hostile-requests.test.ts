import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { isErrorBody } from '@platform/errors';
import { VERSION_MESSAGE } from '@platform/service-kit';
import { digestOf, signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { sendRaw } from './support/raw-http.ts';
import { CLIENT_KEY, type LoggedInUser, type Stack, startStack } from './support/stack.ts';

/** What a raw socket read before the server closed it, and how long that took. */
interface RawExchange {
  text: string;
  closedAfterMs: number;
}

/**
 * Writes `head` and then one chunk from `drip` every `intervalMs`, the way a slow-loris client does, and
 * resolves when the server closes the connection (or after `giveUpMs`, with what it read).
 */
function slowClient(url: string, head: string, drip: () => string, intervalMs: number, giveUpMs: number): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(Number(port), hostname);
    let text = '';
    const timer = setInterval(() => socket.writable && socket.write(drip()), intervalMs);
    const giveUp = setTimeout(() => socket.destroy(), giveUpMs);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ text, closedAfterMs: performance.now() - started });
    });
  });
}

/** The JSON body of a raw HTTP answer. */
const bodyOf = (raw: string): unknown => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));

describe('hostile requests at the gateway (malformed, oversized, slow)', function () {
  this.timeout(60_000);
  let stack: Stack;
  let admin: LoggedInUser;

  before(async () => {
    // Short client limits, so the slow-loris cases take seconds rather than the production 10 s / 30 s.
    stack = await startStack({ gatewayEnv: { HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '2000' } });
    admin = await stack.userWith(['ADMIN']);
  });
  after(async () => {
    await stack?.close();
  });

  const createUserBody = () => ({
    username: `hostile-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`,
    firstName: 'Eve',
    lastName: 'Hostile',
    locale: 'en_US',
    timezone: 'Europe/Istanbul',
    roles: ['STANDARD_USER'],
    status: 'ACTIVE',
  });

  /** Asserts an error answer in the contract's shape for `target`, and that the databases did not change. */
  async function assertRefused(status: number, answer: { status: number; json: () => Record<string, unknown> }, before: string, target: string) {
    assert.equal(answer.status, status);
    const body = answer.json();
    assert.ok(isErrorBody(body), JSON.stringify(body));
    assert.equal(body.status, status);
    assert.equal(body.path, target);
    assert.equal(await stack.snapshot(), before, 'the database changed');
  }

  it('when the body is malformed JSON, answers 400 in the error shape and changes nothing', async () => {
    for (const text of ['{"username": "a@', '{"username": "a@example.com",}', "{'username': 1}", '\u0000', 'null garbage', '{"a":1}{"b":2}']) {
      const before = await stack.snapshot();
      const res = await stack.call('POST', '/v1/users/create', { body: Buffer.from(text), bearer: admin.accessToken });
      await assertRefused(400, res, before, '/v1/users/create');
    }
  });

  it('when the Content-Type is not JSON, answers 415 in the error shape and changes nothing', async () => {
    for (const type of ['text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'application/json-patch+xml']) {
      const before = await stack.snapshot();
      const res = await stack.call('POST', '/v1/users/create', { body: createUserBody(), bearer: admin.accessToken, headers: { 'content-type': type } });
      await assertRefused(415, res, before, '/v1/users/create');
    }
  });

  it('when the body is 10 MB, answers 413 in the error shape, declared or chunked', async () => {
    const huge = Buffer.alloc(10 * 1024 * 1024, 'a');
    const target = '/v1/users/create';
    const headers = signedHeaders('POST', target, { key: CLIENT_KEY, body: huge, bearer: admin.accessToken });
    const before = await stack.snapshot();
    // The gateway may answer before reading it all and close: an EPIPE on our side is fine, the answer is what counts.
    const declared = await sendRaw(stack.gatewayUrl, 'POST', target, headers, huge);
    await assertRefused(413, declared, before, target);
    const chunked = await sendRaw(stack.gatewayUrl, 'POST', target, { ...headers, 'transfer-encoding': 'chunked' }, huge);
    await assertRefused(413, chunked, before, target);
  });

  it('when a request has 10 000 headers, answers 431 in the error shape and keeps serving', async () => {
    const target = '/v1/weather-stations/get-cities';
    const headers = signedHeaders('GET', target, { key: CLIENT_KEY, bearer: admin.accessToken });
    for (let i = 0; i < 10_000; i++) headers[`x-filler-${i}`] = 'v';
    const res = await sendRaw(stack.gatewayUrl, 'GET', target, headers);
    assert.equal(res.status, 431);
    assert.ok(isErrorBody(res.json()), res.body.toString());
    assert.equal((await stack.call('GET', target, { bearer: admin.accessToken })).status, 200);
  });

  it('when the header section trickles in (slow-loris), cuts the connection with 408 once the header timeout passes', async () => {
    let n = 0;
    const exchange = await slowClient(stack.gatewayUrl, 'GET /v1/weather-stations/get-cities HTTP/1.1\r\nHost: x\r\n', () => `x-drip-${n++}: 1\r\n`, 200, 8000);
    assert.ok(exchange.closedAfterMs < 3000, `connection held for ${Math.round(exchange.closedAfterMs)} ms`);
    assert.match(exchange.text, /^HTTP\/1\.1 408 /);
    assert.ok(isErrorBody(bodyOf(exchange.text)), exchange.text);
  });

  it('when the body trickles in, cuts the connection with 408 once the request timeout passes, and changes nothing', async () => {
    const before = await stack.snapshot();
    const target = '/v1/users/create';
    const body = Buffer.from(JSON.stringify(createUserBody()));
    const headers = signedHeaders('POST', target, { key: CLIENT_KEY, body, bearer: admin.accessToken });
    const head = `POST ${target} HTTP/1.1\r\nHost: x\r\n${Object.entries({ ...headers, 'content-length': String(body.length) })
      .map(([k, v]) => `${k}: ${v}`)
      .join('\r\n')}\r\n\r\n`;
    let sent = 0;
    const exchange = await slowClient(stack.gatewayUrl, head, () => body.toString('latin1', sent, ++sent), 200, 8000);
    assert.ok(exchange.closedAfterMs < 4000, `connection held for ${Math.round(exchange.closedAfterMs)} ms`);
    assert.match(exchange.text, /^HTTP\/1\.1 408 /);
    assert.ok(isErrorBody(bodyOf(exchange.text)), exchange.text);
    assert.equal(await stack.snapshot(), before);
  });

  it('when the request line or a header is not valid HTTP, answers 400 in the error shape', async () => {
    for (const head of ['GARBAGE\r\n\r\n', 'GET /v1/x HTTP/1.1\r\nHost: x\r\nBad Header Name: 1\r\n\r\n', 'GET /v1/x HTTP/1.1\r\nHost: x\r\nx-nul: a\u0000b\r\n\r\n']) {
      const exchange = await slowClient(stack.gatewayUrl, head, () => '', 1000, 3000);
      assert.match(exchange.text, /^HTTP\/1\.1 400 /, JSON.stringify(head));
      assert.ok(isErrorBody(bodyOf(exchange.text)), exchange.text);
    }
  });

  it('when an HTTP/1.1 request has no Host, answers 400 in the error shape with a request id, proxies nothing and closes', async () => {
    const before = await stack.snapshot();
    const exchange = await slowClient(stack.gatewayUrl, 'GET /v1/weather-stations/get-cities HTTP/1.1\r\n\r\n', () => '', 1000, 3000);
    assert.match(exchange.text, /^HTTP\/1\.1 400 /);
    assert.match(exchange.text, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i);
    const body = bodyOf(exchange.text);
    assert.ok(isErrorBody(body), exchange.text);
    assert.deepEqual([body.path, body.messages], ['/v1/weather-stations/get-cities', [body.message]], 'station paths carry messages');
    // Announcing a body: it is not invited (no 100 Continue), the 400 is the final answer.
    const announced = await slowClient(stack.gatewayUrl, 'POST /v1/users HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n', () => '', 1000, 3000);
    assert.match(announced.text, /^HTTP\/1\.1 400 /);
    assert.ok(!announced.text.includes('100 Continue'), announced.text);
    assert.equal(await stack.snapshot(), before);
  });

  it('when the request line names HTTP/2.0 or HTTP/0.9, answers 400 in the error shape with a request id, proxies nothing and closes', async () => {
    const before = await stack.snapshot();
    for (const version of ['HTTP/2.0', 'HTTP/0.9']) {
      const exchange = await slowClient(stack.gatewayUrl, `POST /v1/users ${version}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`, () => '', 1000, 3000);
      assert.match(exchange.text, /^HTTP\/1\.1 400 /, version);
      assert.match(exchange.text, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i);
      const body = bodyOf(exchange.text);
      assert.ok(isErrorBody(body), exchange.text);
      assert.deepEqual([body.message, body.path], [VERSION_MESSAGE, '/v1/users']);
    }
    assert.equal(await stack.snapshot(), before);
  });

  it('when the path has an empty segment, answers 404 and proxies nothing (the upstream would see another path than the one signed)', async () => {
    const victim = await stack.identity.createUser({ status: 'BLOCKED' });
    const target = `/v1/users//unblock/${victim.id}`;
    const res = await stack.call('GET', target, { bearer: admin.accessToken });
    assert.equal(res.status, 404, res.body.toString());
    assert.ok(isErrorBody(res.json()));
    const row = (await stack.identity.db('users').where({ id: victim.id }).first('status')) as { status: string };
    assert.equal(row.status, 'BLOCKED');
  });

  it('when the path is not valid percent-encoding, answers 400 in the error shape', async () => {
    for (const target of ['/v1/accounts/%ZZ', '/v1/weather-stations/get-districts-of/%E0%A4%A', '/v1/users/unblock/%']) {
      const res = await stack.call('GET', target, { bearer: admin.accessToken });
      assert.equal(res.status, 400, `${target}: ${res.body.toString()}`);
      assert.ok(isErrorBody(res.json()));
      assert.equal(res.json().path, target);
    }
  });

  it('when text carries a NUL character (in the body, the path or the query), answers 400 in the error shape and changes nothing', async () => {
    const before = await stack.snapshot();
    const calls: Array<[string, string, unknown]> = [
      ['POST', '/v1/auth/login', { username: 'a\u0000b@example.com', password: 'x\u0000y' }],
      ['POST', '/v1/users/create', { ...createUserBody(), firstName: 'Eve\u0000' }],
      ['POST', '/v1/weather-stations/by/city-district', { city: 'ankara', district: '\u0000' }],
      ['GET', '/v1/weather-stations/get-districts-of/ank%00ara', undefined],
      ['GET', '/v1/weather-stations/nearest?latitude=1%00&longitude=2', undefined],
    ];
    for (const [method, target, body] of calls) {
      const res = await stack.call(method, target, { body, bearer: admin.accessToken });
      assert.equal(res.status, 400, `${target}: ${res.body.toString()}`);
      assert.ok(isErrorBody(res.json()));
    }
    assert.equal(await stack.snapshot(), before);
  });

  it('when text is not well-formed Unicode (a lone surrogate in a value or a key), answers 400 naming it and changes nothing', async () => {
    const before = await stack.snapshot();
    const calls: Array<[string, unknown]> = [
      ['/v1/users/create', { ...createUserBody(), firstName: 'Eve\ud800' }],
      ['/v1/auth/login', { username: 'a\udc00b@example.com', password: 'some-password' }],
      ['/v1/weather-stations/by/city-district', { city: 'ankara', district: '\ud83d' }],
      ['/v1/users/create', { ...createUserBody(), ['\ud800']: 1 }],
    ];
    for (const [target, body] of calls) {
      const res = await stack.call('POST', target, { body, bearer: admin.accessToken });
      assert.equal(res.status, 400, `${target}: ${res.body.toString()}`);
      assert.ok(isErrorBody(res.json()));
      assert.match(String(res.json().message), /well-formed Unicode/);
    }
    assert.equal(await stack.snapshot(), before);
    // A surrogate pair (an emoji) is a character like any other.
    assert.equal((await stack.call('POST', '/v1/users/create', { body: { ...createUserBody(), firstName: 'Eve \ud83d\ude00' }, bearer: admin.accessToken })).status, 201);
  });

  it('when a JSON body\'s bytes are not UTF-8, answers 400 naming it, and 415 for another declared charset; changes nothing (they were read as U+FFFD or as UTF-16)', async () => {
    const before = await stack.snapshot();
    const bad = Buffer.from([0xff, 0xfe, 0xc3]);
    // The bad bytes inside a string value, the rest well-formed JSON.
    const [head, tail] = JSON.stringify(createUserBody()).split('"firstName":"Eve') as [string, string];
    const bodies: Array<[string, Buffer]> = [
      ['/v1/auth/login', Buffer.concat([Buffer.from('{"username":"nobody@example.com","password":"pass'), bad, Buffer.from('word-1"}')])],
      ['/v1/users/create', Buffer.concat([Buffer.from(`${head}"firstName":"Eve`), bad, Buffer.from(tail)])],
    ];
    for (const [target, body] of bodies) {
      const headers = signedHeaders('POST', target, { key: CLIENT_KEY, body, bearer: admin.accessToken });
      const res = await sendRaw(stack.gatewayUrl, 'POST', target, headers, body);
      assert.equal(res.status, 400, `${target}: ${res.body.toString()}`);
      assert.ok(isErrorBody(res.json()));
      assert.equal(res.json().message, 'Request body is not valid UTF-8');
    }
    // Another charset than UTF-8 (the parser took any utf-*): 415, whatever the bytes; utf-8 spelled in any case passes.
    for (const charset of ['utf-16le', 'utf-16', 'utf-7', 'UTF-32']) {
      const body = Buffer.from(JSON.stringify({ username: 'nobody@example.com', password: 'password-1' }), charset.toLowerCase() === 'utf-16le' ? 'utf16le' : 'utf8');
      const headers = signedHeaders('POST', '/v1/auth/login', { key: CLIENT_KEY, body, headers: { 'content-type': `application/json; charset=${charset}` } });
      const res = await sendRaw(stack.gatewayUrl, 'POST', '/v1/auth/login', headers, body);
      assert.equal(res.status, 415, `${charset}: ${res.body.toString()}`);
      assert.equal(res.json().message, 'Unsupported body encoding or charset; send UTF-8 JSON');
    }
    assert.equal(await stack.snapshot(), before);
    const body = Buffer.from(JSON.stringify({ username: 'nobody@example.com', password: 'password-1' }));
    const upper = await sendRaw(stack.gatewayUrl, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: CLIENT_KEY, body, headers: { 'content-type': 'application/json; charset=UTF-8' } }), body);
    assert.equal(upper.status, 401, upper.body.toString());
  });

  it('when the signed digest does not match a body altered in transit, answers 401 and changes nothing', async () => {
    const before = await stack.snapshot();
    const body = Buffer.from(JSON.stringify(createUserBody()));
    const headers = signedHeaders('POST', '/v1/users/create', { key: CLIENT_KEY, body, bearer: admin.accessToken });
    const altered = Buffer.from(body.toString().replace('STANDARD_USER', 'ADMIN'));
    const res = await sendRaw(stack.gatewayUrl, 'POST', '/v1/users/create', { ...headers, 'content-digest': digestOf(body) }, altered);
    await assertRefused(401, res, before, '/v1/users/create');
  });
});
