import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { isErrorBody } from '@platform/errors';
import { EXPECTATION_MESSAGE, HOST_INVALID_MESSAGE, HOST_MISSING_MESSAGE, HOST_REPEATED_MESSAGE, type ServerHandle, VERSION_MESSAGE, createBaseApp, createMetrics, finishApp, listen } from '../src/index.ts';
import { captureLogger } from '../src/testing/index.ts';

/** GET over `agent`, so a test can see whether a kept-alive socket survives. */
function get(url: string, agent: Agent): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    })
      .on('error', reject)
      .end();
  });
}

/** Writes raw bytes and returns everything read until the server closes. */
function raw(url: string, bytes: string, keepWriting?: () => string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    let text = '';
    const timer = keepWriting ? setInterval(() => socket.writable && socket.write(keepWriting()), 50) : undefined;
    socket.on('data', (c) => (text += c.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      resolve(text);
    });
  });
}

/** Writes raw bytes, then ends the client's side (a half-close), and returns everything read until the server closes. */
function rawHalfClosed(url: string, bytes: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    let text = '';
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true }, () => socket.end(bytes));
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
  });
}

describe('request guards of every process (service-kit)', () => {
  let server: ServerHandle;
  let lateErrors = 0;
  /** How many requests reached POST /effect (a request that must not run must not count here). */
  let effects = 0;
  /** What the /order handlers did, in order. */
  const order: string[] = [];

  before(async () => {
    const log = captureLogger('test');
    const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false }, requestDeadlineMs: 150 });
    app.get('/fast', (_req, res) => {
      res.json({ ok: true });
    });
    app.get('/cacheable', (_req, res) => {
      res.set('Cache-Control', 'public, max-age=60').json({ ok: true });
    });
    app.get('/hang', async (_req, res) => {
      await sleep(400);
      try {
        res.json({ late: true });
      } catch (err) {
        lateErrors += 1;
        throw err;
      }
    });
    app.post('/effect', (_req, res) => {
      effects += 1;
      res.json({ effects });
    });
    app.get('/slow', async (_req, res) => {
      await sleep(60);
      res.json({ slow: true });
    });
    // Each records when it starts and ends; `a` takes 60 ms, the others answer at once.
    for (const method of ['get', 'post'] as const) {
      app[method]('/order/:name', async (req, res) => {
        order.push(`${req.method} ${req.params.name} start`);
        if (req.params.name === 'a') await sleep(60);
        order.push(`${req.method} ${req.params.name} end`);
        res.json({ name: req.params.name });
      });
    }
    // Reads its body whole before answering, as every body parser does.
    app.post('/body', (req, res) => {
      let bytes = 0;
      req.on('data', (chunk: Buffer) => (bytes += chunk.length));
      req.on('end', () => res.json({ bytes }));
    });
    finishApp(app);
    server = await listen(app, 0, '127.0.0.1', { headersTimeoutMs: 300, requestTimeoutMs: 600 });
  });
  after(async () => {
    await server.close(100);
  });

  it('when anything answers, sets nosniff, no-store, a deny-all CSP and DENY framing; a route may loosen caching', async () => {
    const agent = new Agent();
    for (const path of ['/fast', '/nowhere', '/health/live']) {
      const res = await get(`${server.url}${path}`, agent);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', path);
      assert.equal(res.headers['cache-control'], 'no-store', path);
      assert.match(String(res.headers['content-security-policy']), /^default-src 'none'/, path);
      assert.equal(res.headers['x-frame-options'], 'DENY', path);
    }
    assert.equal((await get(`${server.url}/cacheable`, agent)).headers['cache-control'], 'public, max-age=60');
  });

  it('when a handler outlives the deadline, answers 503 in the error shape, drops the late answer, and keeps the connection usable', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    // The handler would answer 200 after 400 ms: a 503 can only come from the 150 ms deadline.
    const res = await get(`${server.url}/hang`, agent);
    assert.equal(res.status, 503);
    assert.equal(res.headers['retry-after'], '1', 'a 503 a retry may cure says when to retry');
    const body = JSON.parse(res.body) as unknown;
    assert.ok(isErrorBody(body));
    assert.deepEqual((body as { messages?: string[] }).messages, [(body as { message: string }).message]);
    await sleep(350);
    assert.equal(lateErrors, 1, 'the late answer was attempted');
    assert.equal((await get(`${server.url}/fast`, agent)).status, 200, 'the kept-alive socket still serves');
    agent.destroy();
  });

  it('when the header section is too large, answers 431 in the error shape', async () => {
    const text = await raw(server.url, `GET /fast HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.match(text, /^HTTP\/1\.1 431 /);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as unknown;
    assert.ok(isErrorBody(body));
    assert.deepEqual(body.messages, ['Request header fields too large'], 'station paths require messages, and no route is known yet');
    // The security headers of every answer, on those Node's parser refuses too.
    const head = text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase();
    for (const name of ['x-content-type-options: nosniff', 'cache-control: no-store', "content-security-policy: default-src 'none'", 'x-frame-options: deny', 'referrer-policy: no-referrer']) {
      assert.ok(head.includes(`\r\n${name}`), name);
    }
  });

  it('when an HTTP/1.1 request has no Host, answers 400 in the error shape with the security headers and a request id, and closes; HTTP/1.0 needs none', async () => {
    const text = await raw(server.url, 'GET /fast HTTP/1.1\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 400 /);
    const head = text.slice(0, text.indexOf('\r\n\r\n')).toLowerCase();
    for (const header of ['x-request-id: ', 'x-content-type-options: nosniff', 'cache-control: no-store', 'connection: close', 'content-type: application/json']) {
      assert.ok(head.includes(header), `${header} missing from ${head}`);
    }
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { path?: string; message?: string };
    assert.ok(isErrorBody(body));
    assert.equal(body.path, '/fast');
    assert.deepEqual([body.message, (body as { messages?: string[] }).messages], [HOST_MISSING_MESSAGE, [HOST_MISSING_MESSAGE]]);
    // raw() resolved: the server closed the connection. HTTP/1.0 has no Host requirement.
    assert.match(await raw(server.url, 'GET /fast HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 /);
  });

  it('when the Host is no host and optional port, answers 400 in the error shape; names, addresses, IP literals, ports and an empty Host pass', async () => {
    for (const host of ['a b', 'a/b', 'a@b', 'x:8o', '[::1', '::1', 'é.example']) {
      const text = await raw(server.url, `GET /fast HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      assert.match(text, /^HTTP\/1\.1 400 /, host);
      assert.equal((JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { message?: string }).message, HOST_INVALID_MESSAGE, host);
    }
    for (const host of ['', 'localhost', 'api.example.com:443', '127.0.0.1:8080', '[::1]:8080', '[v1.fe80::a+en1]', 'a%20b.example', 'x:']) {
      assert.match(await raw(server.url, `GET /fast HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`), /^HTTP\/1\.1 200 /, host);
    }
  });

  it('when a request refused for its Host announces a body, does not invite it (no 100 Continue), even without a body limit', async () => {
    for (const host of ['', 'Host: a b\r\n', 'Host: a\r\nHost: b\r\n']) {
      const text = await raw(server.url, `POST /fast HTTP/1.1\r\n${host}Content-Length: 2\r\nExpect: 100-continue\r\n\r\n`);
      assert.match(text, /^HTTP\/1\.1 400 /, JSON.stringify(host));
    }
  });

  it('when Expect is anything but 100-continue, answers 417 in the error shape (after the Host\'s 400), not Node\'s bare 417', async () => {
    const text = await raw(server.url, 'POST /fast HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 200-ok\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 417 /);
    assert.match(text, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i);
    assert.equal((JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { message?: string }).message, EXPECTATION_MESSAGE);
    const noHost = await raw(server.url, 'POST /fast HTTP/1.1\r\nContent-Length: 2\r\nExpect: 200-ok\r\n\r\n');
    assert.equal((JSON.parse(noHost.slice(noHost.indexOf('\r\n\r\n') + 4)) as { message?: string }).message, HOST_MISSING_MESSAGE);
    // 100-continue in any case is met as before.
    assert.match(await raw(server.url, 'GET /fast HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nConnection: close\r\n\r\n'), /^HTTP\/1\.1 (100 Continue\r\n\r\nHTTP\/1\.1 )?200 /);
  });

  it('when the request line names HTTP/2.0 or HTTP/0.9 (which Node\'s parser takes as text), answers 400 in the error shape and closes, as Node does HTTP/1.2 and HTTP/3.0', async () => {
    for (const version of ['HTTP/2.0', 'HTTP/0.9']) {
      for (const head of [`GET /fast ${version}\r\n\r\n`, `GET /fast ${version}\r\nHost: x\r\n\r\n`, `POST /fast ${version}\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n`]) {
        // raw() resolves once the server closed the connection.
        const text = await raw(server.url, head);
        assert.match(text, /^HTTP\/1\.1 400 /, JSON.stringify(head));
        assert.ok(!text.includes('100 Continue'), text);
        assert.match(text, /\r\nX-Request-Id: [0-9a-f-]{36}\r\n/i);
        assert.match(text, /\r\nConnection: close\r\n/i);
        const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { message?: string; path?: string };
        assert.ok(isErrorBody(body));
        assert.deepEqual([body.message, body.path], [VERSION_MESSAGE, '/fast']);
      }
    }
    for (const version of ['HTTP/1.2', 'HTTP/3.0']) {
      const text = await raw(server.url, `GET /fast ${version}\r\nHost: x\r\n\r\n`);
      assert.match(text, /^HTTP\/1\.1 400 /, version);
      assert.ok(isErrorBody(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))), text);
    }
  });

  it('when a request has two Host lines (Node would keep the first unseen), answers 400 in the error shape, whatever their case', async () => {
    for (const head of ['GET /fast HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 'GET /fast HTTP/1.0\r\nhost: a\r\nHOST: a\r\n\r\n']) {
      const text = await raw(server.url, head);
      assert.match(text, /^HTTP\/1\.1 400 /, JSON.stringify(head));
      const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { message?: string };
      assert.equal(body.message, HOST_REPEATED_MESSAGE);
    }
  });

  it('when a malformed request has a long target, the error body\'s path is that whole target, not `/`', async () => {
    const target = `/fast/${'%5B'.repeat(1500)}`;
    const text = await raw(server.url, `GET ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n`);
    assert.match(text, /^HTTP\/1\.1 400 /);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { path?: string };
    assert.equal(body.path, target);
  });

  it('when the headers trickle in past headersTimeoutMs, answers 408 in the error shape and closes', async () => {
    let n = 0;
    const started = performance.now();
    const text = await raw(server.url, 'GET /fast HTTP/1.1\r\nHost: x\r\n', () => `x-${n++}: 1\r\n`);
    // The client never stops sending: only the server's timeout can end this, well before mocha's.
    assert.ok(performance.now() - started < 5000);
    assert.match(text, /^HTTP\/1\.1 408 /);
    assert.ok(isErrorBody(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4))));
  });

  it('when an HTTP/1.0 request is framed by Transfer-Encoding (RFC 9112 section 6.1: faulty framing), answers 400 in the error shape and closes; nothing behind it runs', async () => {
    const before = effects;
    const text = await raw(server.url, 'POST /effect HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nPOST /effect HTTP/1.0\r\nContent-Length: 0\r\n\r\n');
    // Its own 400 first; what follows a request that closes the connection is the parser's 400, after it.
    assert.deepEqual(text.match(/HTTP\/1\.1 \d{3} /g), ['HTTP/1.1 400 ', 'HTTP/1.1 400 '], text);
    assert.match(text, /^[^{]*\{[^}]*"message":"Transfer-Encoding is not part of HTTP\/1\.0"/);
    assert.match(text, /\r\nConnection: close\r\n/i);
    assert.equal(effects, before);
  });

  it('cuts a connection on which nothing moves past idleTimeoutMs: a client that stops reading its answers holds nothing for good', async () => {
    const log = captureLogger('test');
    const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
    const big = Buffer.alloc(4 * 2 ** 20, 'a');
    app.get('/big', (_req, res) => {
      res.type('text/plain').send(big);
    });
    finishApp(app);
    const idle = await listen(app, 0, '127.0.0.1', { idleTimeoutMs: 300 });
    const connections = () => new Promise<number>((resolve, reject) => idle.server.getConnections((err, count) => (err ? reject(err) : resolve(count))));
    try {
      const { port } = new URL(idle.url);
      // Ten answers of 4 MB asked for, none read: the server's writes stall once the buffers are full.
      const socket = connect({ port: Number(port), host: '127.0.0.1' }, () => socket.write('GET /big HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(10)));
      socket.pause();
      socket.on('error', () => undefined);
      await sleep(200);
      assert.equal(await connections(), 1);
      const started = performance.now();
      while ((await connections()) > 0) {
        assert.ok(performance.now() - started < 5000, 'the stalled connection was never cut');
        await sleep(50);
      }
      socket.destroy();
    } finally {
      await idle.close(100);
    }
  });

  it('when it drains, the answers under way say Connection: close, so their clients send nothing more on a connection about to close', async () => {
    const log = captureLogger('test');
    const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
    app.get('/wait', async (_req, res) => {
      await sleep(300);
      res.json({ waited: true });
    });
    finishApp(app);
    const draining = await listen(app, 0);
    const agent = new Agent({ keepAlive: true });
    try {
      const answer = get(`${draining.url}/wait`, agent);
      await sleep(100);
      const closed = draining.close(2000);
      const { status, headers, body } = await answer;
      assert.equal(status, 200);
      assert.equal(body, '{"waited":true}');
      assert.equal(headers.connection, 'close');
      await closed;
    } finally {
      agent.destroy();
      await draining.close(100);
    }
  });

  it('answers a CONNECT 400 in the error shape and closes, where Node drops the connection unanswered', async () => {
    const text = await raw(server.url, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 400 /, text);
    const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { message: string; path: string };
    assert.ok(isErrorBody(body));
    assert.deepEqual([body.message, body.path], ['CONNECT is not supported', 'example.com:443']);
  });

  describe('one connection\'s requests, in order (RFC 9112 section 9.6)', () => {
    const statusLines = (text: string) => text.match(/HTTP\/1\.1 \d{3} /g) ?? [];
    const effect = 'POST /effect HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n';

    it('a request pipelined behind one answered with Connection: close neither runs nor is answered', async () => {
      const before = effects;
      for (const refused of ['GET /fast HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n', 'GET /fast HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n', 'GET /fast HTTP/1.1\r\nHost: x y\r\n\r\n']) {
        const text = await raw(server.url, refused + effect);
        assert.deepEqual(statusLines(text).length, 1, text);
        assert.match(text, /^HTTP\/1\.1 (417|400) /);
        assert.match(text, /\r\nConnection: close\r\n/i);
      }
      // A client that closes the connection itself sends nothing after: what it sends anyway does not run (Node's
      // parser refuses it: a 400, after the answer).
      for (const closing of ['GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n', 'GET /fast HTTP/1.0\r\n\r\n']) {
        const text = await raw(server.url, closing + effect);
        assert.deepEqual(statusLines(text), ['HTTP/1.1 200 ', 'HTTP/1.1 400 '], text);
      }
      // Nothing of them ran: the same request alone does.
      assert.equal(effects, before);
      assert.match(await raw(server.url, effect.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')), /^HTTP\/1\.1 200 /);
      assert.equal(effects, before + 1);
    });

    it('a malformed request behind one still being answered gets its 400 after that answer, never in its place', async () => {
      const before = effects;
      for (const malformed of ['GET / HTTP/1.1\r\nHost: a\r\nbroken header line\r\n\r\n', 'X']) {
        const text = await raw(server.url, `GET /slow HTTP/1.1\r\nHost: x\r\n\r\n${effect}${malformed}`);
        assert.deepEqual(statusLines(text), ['HTTP/1.1 200 ', 'HTTP/1.1 200 ', 'HTTP/1.1 400 '], text);
        assert.match(text, /\{"slow":true\}/);
        // Not the path of a request that was answered: it has none of its own.
        assert.match(text, /"path":"\/"/);
      }
      // Each pipelined request that ran was answered.
      assert.equal(effects, before + 2);
    });

    it('a body that has not all arrived by the request deadline is answered 408 in the error shape, not 503, and the connection closes', async () => {
      const text = await raw(server.url, 'POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab');
      assert.match(text, /^HTTP\/1\.1 408 /, text);
      assert.match(text, /\r\nConnection: close\r\n/i);
      const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { message: string; path: string };
      assert.deepEqual([body.message, body.path], ['Request not received in time', '/body']);
      // A whole body is read and answered as before.
      assert.match(await raw(server.url, 'POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nabcde'), /\{"bytes":5\}/);
    });

    it('pipelined requests run one after another unless both are safe (RFC 9112 section 9.3.2); the answers keep their order either way', async () => {
      const line = (method: string, name: string) => `${method} /order/${name} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`;
      for (const [first, second, expected] of [
        ['POST', 'POST', ['POST a start', 'POST a end', 'POST b start', 'POST b end']],
        ['POST', 'GET', ['POST a start', 'POST a end', 'GET b start', 'GET b end']],
        ['GET', 'POST', ['GET a start', 'GET a end', 'POST b start', 'POST b end']],
        // Both safe: the second runs while the first waits.
        ['GET', 'GET', ['GET a start', 'GET b start', 'GET b end', 'GET a end']],
      ] as const) {
        order.length = 0;
        const text = await raw(server.url, line(first, 'a') + line(second, 'b').replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n'));
        assert.deepEqual(statusLines(text), ['HTTP/1.1 200 ', 'HTTP/1.1 200 '], text);
        assert.ok(text.indexOf('"name":"a"') < text.indexOf('"name":"b"'), text);
        assert.deepEqual(order, expected, `${first} then ${second}`);
      }
    });

    it('a CONNECT pipelined behind a request gets its 400 after that request\'s answer, never in its place', async () => {
      const before = effects;
      const text = await raw(server.url, `GET /slow HTTP/1.1\r\nHost: x\r\n\r\n${effect}CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`);
      assert.deepEqual(statusLines(text), ['HTTP/1.1 200 ', 'HTTP/1.1 200 ', 'HTTP/1.1 400 '], text);
      assert.match(text, /CONNECT is not supported/);
      assert.equal(effects, before + 1);
    });

    it('a target in absolute form (RFC 9112 section 3.2.2) is served as its path and query', async () => {
      const text = await raw(server.url, 'GET http://example.com/fast HTTP/1.1\r\nHost: example.com\r\n\r\nGET HTTPS://example.com:8443?x=1 HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n');
      assert.deepEqual(statusLines(text), ['HTTP/1.1 200 ', 'HTTP/1.1 404 '], text);
      assert.match(text, /\{"ok":true\}/);
      assert.match(text, /"path":"\/\?x=1"/);
    });

    it('a request that asks to upgrade the protocol is answered as any, with Connection: close, as Node reads nothing after it', async () => {
      const before = effects;
      const started = performance.now();
      const text = await raw(server.url, `POST /effect HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nContent-Length: 0\r\n\r\n${effect}`);
      assert.deepEqual(statusLines(text), ['HTTP/1.1 200 '], text);
      assert.match(text, /\r\nConnection: close\r\n/i);
      // Closed at once, not after the keep-alive timeout with the pipelined request unanswered.
      assert.ok(performance.now() - started < 2000, `${Math.round(performance.now() - started)} ms`);
      assert.equal(effects, before + 1);
      // An Upgrade header the Connection header does not name is no upgrade: the connection serves on.
      const plain = await raw(server.url, `GET /fast HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n${effect.replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')}`);
      assert.deepEqual(statusLines(plain), ['HTTP/1.1 200 ', 'HTTP/1.1 200 '], plain);
      assert.equal(effects, before + 2);
    });

    it('a client that ends its side after its requests (a half-close) gets every answer, then the connection closes', async () => {
      const before = effects;
      const text = await rawHalfClosed(server.url, `GET /slow HTTP/1.1\r\nHost: x\r\n\r\n${effect}`);
      assert.deepEqual(statusLines(text), ['HTTP/1.1 200 ', 'HTTP/1.1 200 '], text);
      assert.match(text, /\{"slow":true\}/);
      assert.equal(effects, before + 1);
      // The last answer, still to come when the client ended its side, says the connection closes after it.
      assert.deepEqual(text.match(/^Connection: .*$/gim), ['Connection: keep-alive', 'Connection: close'], text);
      // A body cut short by the half-close is that request's 400 (its handler, which reads it, never answers).
      const cut = await rawHalfClosed(server.url, 'POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab');
      assert.deepEqual(statusLines(cut), ['HTTP/1.1 400 '], cut);
      // So is one that asks to upgrade the protocol (Node's parser finds no fault in it then), before the deadline's 408.
      const upgrading = await rawHalfClosed(server.url, 'POST /body HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\nContent-Length: 5\r\n\r\nab');
      assert.deepEqual(statusLines(upgrading), ['HTTP/1.1 400 '], upgrading);
    });

    it('a body malformed in itself is that request\'s own 400, at once', async () => {
      const text = await raw(server.url, 'POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n');
      assert.deepEqual(statusLines(text), ['HTTP/1.1 400 '], text);
    });
  });
});
