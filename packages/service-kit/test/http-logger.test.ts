import assert from 'node:assert/strict';
import { once } from 'node:events';
import { get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ServiceUnavailableError } from '@platform/errors';
import request from 'supertest';
import { LOGGED_QUERY_VALUES, createBaseApp, createLogger, createMetrics, finishApp, loggedTarget, requestLog } from '../src/index.ts';
import { captureLogger } from '../src/testing/index.ts';

function buildApp() {
  const log = captureLogger('test');
  const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
  app.get('/fine', (_req, res) => {
    res.json({ ok: true });
  });
  app.get('/broken', () => {
    throw Object.assign(new Error('database exploded'), { token: 'leaked-token-value', nested: { password: 'leaked-password' } });
  });
  app.get('/busy', () => {
    throw new ServiceUnavailableError('Hashing is busy');
  });
  app.get('/down', () => {
    throw new ServiceUnavailableError(undefined, { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }) });
  });
  // As the gateway's admission wraps whatever its store throws.
  app.get('/wrapped', () => {
    throw new ServiceUnavailableError(undefined, { cause: new Error('unexpected admission script result x') });
  });
  app.get('/logs', (req, res) => {
    requestLog(req, log.logger).warn({ reason: 'something' }, 'a line of the request');
    res.json({});
  });
  // As the gateway relays an upstream's answer: a status and a body, nothing thrown.
  app.get('/relayed/:status', (req, res) => {
    res.status(Number(req.params.status)).json({ relayed: true });
  });
  finishApp(app);
  return { app, log };
}

describe('request log line (the request envelope)', () => {
  it('when the answer is below 500, holds exactly the allow-listed fields', async () => {
    const { app, log } = buildApp();
    await request(app).get('/fine?limit=1&x=1').set('X-Request-Id', 'req-fine').set('Authorization', 'Bearer secret-token');
    const line = log.lines().find((l) => l.msg === 'GET 200');
    assert.ok(line, log.text());
    assert.deepEqual(Object.keys(line).sort(), ['level', 'msg', 'req', 'res', 'responseTime', 'service', 'time', 'traceId']);
    assert.deepEqual(Object.keys(line.req as object).sort(), ['clientRequestId', 'id', 'method', 'remoteAddress', 'url']);
    assert.equal((line.req as { url: string }).url, '/fine?limit=1&x=[redacted]');
    assert.equal((line.req as { clientRequestId: string }).clientRequestId, 'req-fine');
    assert.equal(line.level, 'info');
    assert.ok(!log.text().includes('secret-token'));
  });

  it('shows no query value but the allow-listed ones, and no fragment, on the request line and every line of the request, whatever the answer', async () => {
    const { app, log } = buildApp();
    const secrets = '&access_token=SeCrEt-1&password=SeCrEt-2&SeCrEt-3&pass%77ord=SeCrEt-4&=SeCrEt-5';
    for (const path of ['/fine', '/logs', '/broken', '/busy', '/relayed/404', '/nowhere']) await request(app).get(`${path}?limit=5${secrets}&cursor=c1`);
    const lines = log.lines().filter((l) => l.req !== undefined);
    assert.equal(lines.length, 7, log.text());
    for (const line of lines) assert.match((line.req as { url: string }).url, /^\/[a-z/0-9]+\?limit=5&access_token=\[redacted\]&password=\[redacted\]&\[redacted\]&pass%77ord=\[redacted\]&=\[redacted\]&cursor=c1$/);
    assert.ok(!log.text().includes('SeCrEt'), log.text());
  });

  it('when the answer is a 500, logs the error at error level, its secret fields redacted', async () => {
    const { app, log } = buildApp();
    const res = await request(app).get('/broken');
    assert.equal(res.status, 500);
    const line = log.lines().find((l) => l.msg === 'GET 500');
    assert.ok(line, log.text());
    assert.equal(line.level, 'error');
    const err = line.err as { message?: string; token?: string; nested?: { password?: string } };
    assert.equal(err.message, 'database exploded');
    assert.equal(err.token, '[redacted]');
    assert.equal(err.nested?.password, '[redacted]');
    assert.ok(!log.text().includes('leaked-'));
  });

  it('when a 503 is a refusal the process chose (thrown without a cause), logs it at warn with its reason and no stack', async () => {
    const { app, log } = buildApp();
    const res = await request(app).get('/busy');
    assert.equal(res.status, 503);
    const line = log.lines().find((l) => l.msg === 'GET 503');
    assert.ok(line, log.text());
    assert.equal(line.level, 'warn');
    assert.equal(line.reason, 'Hashing is busy');
    assert.equal(line.err, undefined);
    assert.ok(!log.text().includes('"stack"'), log.text());
  });

  it('when a 503\'s cause says a dependency is down, logs it at warn with the cause\'s message as its reason and no stack; a 503 wrapping any other error at error with it', async () => {
    const { app, log } = buildApp();
    assert.equal((await request(app).get('/down')).status, 503);
    const line = log.lines().find((l) => l.msg === 'GET 503');
    assert.ok(line, log.text());
    assert.equal(line.level, 'warn');
    assert.equal(line.reason, 'Service temporarily unavailable: connect ECONNREFUSED 127.0.0.1:6379');
    assert.equal(line.err, undefined);
    assert.ok(!log.text().includes('"stack"'), log.text());
    assert.equal((await request(app).get('/wrapped')).status, 503);
    const fault = log.lines().find((l) => l.msg === 'GET 503' && l.level === 'error');
    assert.ok(fault, log.text());
    assert.match(String((fault.err as { stack?: string }).stack), /unexpected admission script result/);
  });

  it('when a 5xx is relayed (nothing thrown), makes up no stack: a 503 at warn, another 5xx at error', async () => {
    const { app, log } = buildApp();
    for (const status of [503, 502, 500, 504]) assert.equal((await request(app).get(`/relayed/${status}`)).status, status);
    const levels = Object.fromEntries([503, 502, 500, 504].map((status) => [status, log.lines().find((l) => l.msg === `GET ${status}`)?.level]));
    assert.deepEqual(levels, { 503: 'warn', 502: 'error', 500: 'error', 504: 'error' });
    assert.ok(!log.text().includes('"err"'), log.text());
  });

  it('carries the trace id of a valid traceparent (CONTRACT.md part 12) on the request line', async () => {
    const { app, log } = buildApp();
    await request(app).get('/fine').set('traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    assert.equal(log.lines().find((l) => l.msg === 'GET 200')?.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('starts a trace when the traceparent is missing or invalid, and names it on every line of the request', async () => {
    const log = captureLogger('test');
    const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
    app.get('/warns', (req, res) => {
      requestLog(req, log.logger).warn('something to say');
      res.json({});
    });
    finishApp(app);
    for (const traceparent of [undefined, '00-00000000000000000000000000000000-00f067aa0ba902b7-01', 'nonsense']) {
      const call = request(app).get('/warns');
      const res = await (traceparent === undefined ? call : call.set('traceparent', traceparent));
      const lines = log.lines().filter((l) => (l.req as { id?: string } | undefined)?.id === res.headers['x-request-id']);
      assert.equal(lines.length, 2, log.text());
      assert.match(String(lines[0]?.traceId), /^[0-9a-f]{32}$/);
      assert.notEqual(lines[0]?.traceId, '0'.repeat(32));
      assert.equal(lines[1]?.traceId, lines[0]?.traceId);
    }
  });

  it('when a health probe or the metrics scrape is answered, writes no line', async () => {
    const { app, log } = buildApp();
    await request(app).get('/health/live');
    await request(app).get('/metrics');
    assert.equal(log.lines().filter((l) => typeof l.msg === 'string' && /^GET \d+$/.test(l.msg)).length, 0);
  });

  it('writes the line of an answer below 500 as pino would, key for key and byte for byte, whatever the URL and id hold', async () => {
    const { app, log } = buildApp();
    // Odd characters in the names, which the line keeps as sent (the values are redacted).
    const url = '/fine?"quoted"=1&\\back=2&%E2%80%A8=3&\u00e7=4';
    await request(app).get(url).set('X-Request-Id', 'client:id.1');
    const text = log.text().split('\n').find((l) => l.includes('"msg":"GET 200"'));
    assert.ok(text, log.text());
    const line = JSON.parse(text) as Record<string, unknown> & { req: Record<string, unknown>; time: string };
    assert.deepEqual(Object.keys(line), ['level', 'time', 'service', 'req', 'traceId', 'res', 'responseTime', 'msg']);
    assert.deepEqual(Object.keys(line.req), ['id', 'clientRequestId', 'method', 'url', 'remoteAddress']);
    // The client sent the quotes percent-encoded; the backslash as it is.
    assert.equal(line.req.url, '/fine?%22quoted%22=[redacted]&\\back=[redacted]&%E2%80%A8=[redacted]&%C3%A7=[redacted]');
    // pino's own line for the same fields and time is the very same text.
    const chunks: string[] = [];
    const reference = createLogger({ service: 'test', destination: { write: (chunk: string) => chunks.push(chunk) } });
    const { level: _level, time: _time, service: _service, msg, ...fields } = line;
    reference.child({}, { redact: [] }).info(fields, String(msg));
    assert.equal(chunks[0]?.replace(/"time":"[^"]*"/, `"time":"${line.time}"`), `${text}\n`);
  });

  it('writes its lines through pino when the logger adds to them (a mixin): nothing of them is lost', async () => {
    const chunks: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(chunk.toString());
        callback();
      },
    });
    const logger = pino({ base: { service: 'test' }, mixin: () => ({ shard: 7 }) }, destination);
    const app = createBaseApp({ logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
    app.get('/fine', (_req, res) => {
      res.json({ ok: true });
    });
    finishApp(app);
    await request(app).get('/fine');
    const line = chunks.map((c) => JSON.parse(c) as Record<string, unknown>).find((l) => l.msg === 'GET 200');
    assert.equal(line?.shard, 7, chunks.join(''));
    assert.equal((line?.res as { statusCode?: number } | undefined)?.statusCode, 200);
  });

  it('counts and times a finished answer once, and one the client left before its end not at all', async () => {
    const metrics = createMetrics('test');
    const log = captureLogger('test');
    const app = createBaseApp({ logger: log.logger, metrics, checks: [], lifecycle: { draining: false } });
    app.get('/fine', (_req, res) => {
      res.json({ ok: true });
    });
    let answered: () => void = () => undefined;
    const lateAnswerWritten = new Promise<void>((resolve) => {
      answered = resolve;
    });
    app.get('/slow', (_req, res) => {
      setTimeout(() => {
        res.json({ late: true });
        answered();
      }, 150);
    });
    finishApp(app);
    await request(app).get('/fine');
    await request(app).get('/fine');
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const client = httpGet({ host: '127.0.0.1', port, path: '/slow' });
      client.on('error', () => undefined);
      setTimeout(() => client.destroy(), 30);
      await lateAnswerWritten;
    } finally {
      server.close();
    }
    const text = await metrics.registry.metrics();
    assert.match(text, /http_requests_total\{method="GET",route="\/fine",status="200",service="test"\} 2\n/);
    assert.match(text, /http_request_duration_seconds_count\{service="test",method="GET",route="\/fine",status="200"\} 2\n/);
    assert.doesNotMatch(text, /route="\/slow"/);
    // Its client left before the answer: the line says so, with no status (200 was only the default).
    assert.equal(log.lines().filter((l) => l.msg === 'GET 200').length, 2, log.text());
    const left = log.lines().filter((l) => l.msg === 'GET aborted before an answer');
    assert.equal(left.length, 1, log.text());
    assert.equal(left[0]?.level, 'info');
    assert.equal(left[0]?.res, undefined);
    assert.equal((left[0]?.req as { url: string }).url, '/slow');
  });
});

describe('a request whose client left before its answer', () => {
  it('has its aborted line, and a fault it ends in afterwards a line of its own at error with the cause; a refusal none', async () => {
    const log = captureLogger('test');
    const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
    const settled: Array<Promise<void>> = [];
    const later = (path: string, fault: Error) => {
      let done: () => void = () => undefined;
      settled.push(new Promise<void>((resolve) => (done = resolve)));
      app.get(path, (_req, _res, next) => {
        setTimeout(() => {
          next(fault);
          done();
        }, 150);
      });
    };
    later('/stalls', new Error('the upstream stalled'));
    later('/busy-later', new ServiceUnavailableError('Hashing is busy'));
    finishApp(app);
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      for (const path of ['/stalls', '/busy-later']) {
        const client = httpGet({ host: '127.0.0.1', port, path });
        client.on('error', () => undefined);
        setTimeout(() => client.destroy(), 30);
      }
      await Promise.all(settled);
    } finally {
      server.close();
    }
    const lines = log.lines().filter((l) => l.req !== undefined);
    assert.deepEqual(lines.map((l) => [l.level, l.msg, (l.req as { url: string }).url]).sort(), [
      ['error', 'GET failed after its client left', '/stalls'],
      ['info', 'GET aborted before an answer', '/busy-later'],
      ['info', 'GET aborted before an answer', '/stalls'],
    ]);
    const late = lines.find((l) => l.level === 'error');
    assert.equal((late?.err as { message?: string }).message, 'the upstream stalled');
    assert.ok((late?.responseTime as number) >= 140, JSON.stringify(late));
  });
});

describe('the request target a log line shows (loggedTarget)', () => {
  it('keeps a target without query or fragment as it is, and the allow-listed values as sent', () => {
    for (const target of ['/', '/v1/x/17130', '/v1/a%20b']) assert.equal(loggedTarget(target), target);
    assert.equal(loggedTarget('/p?limit=5&cursor=a-b_c&latitude=39.9&longitude=32.8'), '/p?limit=5&cursor=a-b_c&latitude=39.9&longitude=32.8');
    assert.equal(loggedTarget('/p?'), '/p?');
  });

  it('redacts every other value, a part without `=`, a name that only decodes to an allowed one when it is not, and a fragment', () => {
    const cases: [string, string][] = [
      ['/p?token=abc', '/p?token=[redacted]'],
      ['/p?limit=1&token=abc&limit=2', '/p?limit=1&token=[redacted]&limit=2'],
      ['/p?secret-alone', '/p?[redacted]'],
      ['/p?=v&&limit=1', '/p?=[redacted]&&limit=1'],
      // Read as a URL parser reads names: an encoded allowed name keeps its value, a broken encoding does not.
      ['/p?li%6Dit=3&%E0%A4%A=4&li+mit=5', '/p?li%6Dit=3&%E0%A4%A=[redacted]&li+mit=[redacted]'],
      ['/p?limit=1#frag-secret', '/p?limit=1#[redacted]'],
      ['/p#frag?token=abc', '/p#[redacted]'],
      ['/p?username=someone%40example.com&q=someone', '/p?username=[redacted]&q=[redacted]'],
      // A listed parameter's value only when it is made of what such values are: a secret cannot ride along.
      ['/p?limit=1;token=S&limit==S&limit=1?token=S', '/p?limit=[redacted]&limit=[redacted]&limit=[redacted]'],
      ['/p?limit=1%26token%3DS&userId=a%26token%3DS', '/p?limit=[redacted]&userId=[redacted]'],
      [`/p?cursor=${'c'.repeat(129)}&cursor=${'c'.repeat(128)}`, `/p?cursor=[redacted]&cursor=${'c'.repeat(128)}`],
      ['/p?since=2026-11-01T00:00:00Z&until=2026-11-02T00:00:00.5+03:00&latitude=-39.93&status=ACTIVE&type=login.failed&cursor=eyJpZCI6MX0_-', '/p?since=2026-11-01T00:00:00Z&until=2026-11-02T00:00:00.5+03:00&latitude=-39.93&status=ACTIVE&type=login.failed&cursor=eyJpZCI6MX0_-'],
    ];
    for (const [target, shown] of cases) assert.equal(loggedTarget(target), shown, target);
    assert.ok(LOGGED_QUERY_VALUES.has('limit') && !LOGGED_QUERY_VALUES.has('username'));
  });
});
