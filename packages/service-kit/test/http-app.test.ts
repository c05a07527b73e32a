import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import type { RequestHandler } from 'express';
import { BadRequestError, MethodNotAllowedError } from '@platform/errors';
import { type Lifecycle, type ReadinessCheck, createBaseApp, createMetrics, createMetricsApp, finishApp, inSequence, listen, requestLog } from '../src/index.ts';
import { captureLogger } from '../src/testing/index.ts';

function buildApp(checks: ReadinessCheck[] = [], lifecycle: Lifecycle = { draining: false }) {
  const log = captureLogger('test');
  const metrics = createMetrics('test');
  const app = createBaseApp({ logger: log.logger, metrics, checks, lifecycle });
  app.get('/things/:id', (_req, res) => {
    res.json({ ok: true });
  });
  app.post('/echo-secret', (req, res) => {
    requestLog(req, log.logger).info({ password: 'hunter2-secret', nested: { token: 'tok-secret' } }, 'handling');
    res.status(204).end();
  });
  app.get('/slow', async (_req, res) => {
    await sleep(300);
    res.json({ finished: true });
  });
  finishApp(app);
  return { app, log, metrics, lifecycle };
}

describe('X-Request-Id', () => {
  it('when the caller sends a well-formed id, answers and logs under a new UUID, the caller\'s logged beside it as clientRequestId', async () => {
    const { app, log } = buildApp();
    const res = await request(app).get('/things/1').set('X-Request-Id', 'abc-123.def:9');
    assert.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    const line = log.lines().find((l) => (l.req as { url?: string } | undefined)?.url === '/things/1');
    assert.deepEqual(line?.req && { id: (line.req as { id?: string }).id, clientRequestId: (line.req as { clientRequestId?: string }).clientRequestId }, {
      id: res.headers['x-request-id'],
      clientRequestId: 'abc-123.def:9',
    });
  });

  it('when requestIdFrom vouches for the incoming id (a service under the gateway\'s assertion), logs under it, if well-formed, and leaves its echo to the gateway', async () => {
    const log = captureLogger('test');
    const app = createBaseApp({ logger: log.logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false }, requestIdFrom: (req) => req.headers['x-request-id'] as string | undefined });
    app.get('/things/:id', (_req, res) => {
      res.json({ ok: true });
    });
    finishApp(app);
    // The gateway answers its client with its own X-Request-Id: behind it, the id is not repeated.
    assert.equal((await request(app).get('/things/1').set('X-Request-Id', 'abc-123.def:9')).headers['x-request-id'], undefined);
    assert.match((await request(app).get('/things/1').set('X-Request-Id', 'vouched but <malformed>')).headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    // The line is written when the answer closes, which may be just after the caller has read it.
    const taken = () => log.lines().find((l) => (l.req as { id?: string } | undefined)?.id === 'abc-123.def:9');
    for (let waited = 0; waited < 2000 && taken() === undefined; waited += 10) await sleep(10);
    const line = taken();
    assert.ok(line && !('clientRequestId' in (line.req as object)), 'a taken id is not logged, or logged twice');
  });

  it('when the caller sends none or a malformed one, answers with a new UUID, and logs no malformed id', async () => {
    const { app, log } = buildApp();
    const none = await request(app).get('/things/1');
    assert.match(none.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    const bad = await request(app).get('/things/1').set('X-Request-Id', 'bad id with spaces <script>');
    assert.match(bad.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    const long = await request(app).get('/things/1').set('X-Request-Id', 'a'.repeat(129));
    assert.match(long.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    assert.ok(!log.text().includes('<script>') && !log.text().includes('a'.repeat(129)));
  });

  it('is on error answers too, matching the log line', async () => {
    const { app, log } = buildApp();
    const res = await request(app).get('/nowhere').set('X-Request-Id', 'req-404');
    assert.equal(res.status, 404);
    assert.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
    assert.ok(log.lines().some((l) => (l.req as { id?: string } | undefined)?.id === res.headers['x-request-id'] && l.msg === 'GET 404'));
  });
});

describe('request log', () => {
  it('writes one line per request with method, URL and status, and never headers or secrets', async () => {
    const { app, log } = buildApp();
    await request(app)
      .post('/echo-secret')
      .set('Authorization', 'Bearer very-secret-token')
      .set('Signature', 'sig1=:c2VjcmV0:')
      .send({ password: 'body-password' });
    const text = log.text();
    for (const secret of ['very-secret-token', 'c2VjcmV0', 'hunter2-secret', 'tok-secret', 'body-password']) {
      assert.ok(!text.includes(secret), `log contains ${secret}`);
    }
    const done = log.lines().filter((l) => l.msg === 'POST 204');
    assert.equal(done.length, 1);
    assert.deepEqual(done[0]!.res, { statusCode: 204 });
    const handled = log.lines().find((l) => l.msg === 'handling');
    assert.equal(handled?.password, '[redacted]');
    assert.deepEqual(handled?.nested, { token: '[redacted]' });
  });
});

/** The value of the sample of `name` with exactly these labels in a Prometheus text answer, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)\{(.*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (JSON.stringify(Object.entries(found).sort()) === JSON.stringify(Object.entries(labels).sort())) return Number(match[3]);
  }
  return undefined;
}

describe('GET /metrics', () => {
  it('counts requests by route template and status, not by raw path', async () => {
    const { app } = buildApp();
    await request(app).get('/things/1');
    await request(app).get('/things/2');
    await request(app).get('/nowhere');
    const res = await request(app).get('/metrics');
    assert.equal(res.status, 200);
    assert.match(res.headers['content-type'] ?? '', /^text\/plain/);
    const things = { method: 'GET', route: '/things/:id', status: '200', service: 'test' };
    assert.equal(sample(res.text, 'http_requests_total', things), 2);
    assert.equal(sample(res.text, 'http_requests_total', { ...things, route: 'unmatched', status: '404' }), 1);
    assert.equal(sample(res.text, 'http_request_duration_seconds_bucket', { ...things, le: '5' }), 2);
    assert.equal(sample(res.text, 'http_request_duration_seconds_count', things), 2);
    assert.ok(!res.text.includes('/things/1'), 'a raw path became a label');
  });

  it('leaves health probes and metric scrapes out of the request metrics, failing probes included (they are not traffic)', async () => {
    const { app } = buildApp([{ name: 'redis', check: async () => Promise.reject(new Error('down')) }]);
    await request(app).get('/things/1');
    for (let i = 0; i < 3; i += 1) {
      assert.equal((await request(app).get('/health/live')).status, 200);
      assert.equal((await request(app).get('/health/ready')).status, 503);
      assert.equal((await request(app).get('/HEALTH/READY')).status, 503);
      assert.equal((await request(app).post('/metrics')).status, 405);
      assert.equal((await request(app).get('/metrics')).status, 200);
    }
    const res = await request(app).get('/metrics');
    const series = res.text.split('\n').filter((line) => /^http_request(s_total|_duration_seconds_count)\{/.test(line));
    assert.deepEqual(
      series.map((line) => /route="([^"]*)",status="(\d+)"/.exec(line)?.slice(1).join(' ')),
      ['/things/:id 200', '/things/:id 200'],
      series.join('\n'),
    );
  });
});

describe('createMetricsApp (a service\'s metrics port)', () => {
  it('serves GET /metrics of the process\'s registry and nothing else: no API, no health, in the error shape', async () => {
    const { app, metrics } = buildApp();
    await request(app).get('/things/1');
    const metricsApp = createMetricsApp({ logger: captureLogger('test').logger, metrics });
    const res = await request(metricsApp).get('/metrics');
    assert.equal(res.status, 200);
    assert.equal(sample(res.text, 'http_requests_total', { method: 'GET', route: '/things/:id', status: '200', service: 'test' }), 1);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    for (const path of ['/things/1', '/health/live', '/health/ready', '/']) {
      const other = await request(metricsApp).get(path);
      assert.equal(other.status, 404, path);
      assert.equal(other.body.status, 404);
    }
    assert.equal((await request(metricsApp).post('/metrics')).status, 405);
  });
});

describe('GET /health/live and /health/ready', () => {
  it('when every check passes, both answer 200', async () => {
    const { app } = buildApp([{ name: 'postgres', check: async () => {} }]);
    assert.deepEqual((await request(app).get('/health/live').expect(200)).body, { status: 'live' });
    assert.deepEqual((await request(app).get('/health/ready').expect(200)).body, { status: 'ready', checks: { postgres: 'up' } });
  });

  it('when a dependency fails or hangs, ready answers 503 naming it, in the error shape, within about a second', async () => {
    const { app, log } = buildApp([
      { name: 'postgres', check: async () => {} },
      { name: 'redis', check: () => Promise.reject(new Error('ECONNREFUSED 10.0.0.7:6379')) },
      { name: 'frozen', check: () => new Promise(() => {}) },
    ]);
    const started = Date.now();
    const res = await request(app).get('/health/ready');
    assert.ok(Date.now() - started < 1500, 'readiness waited on a hung dependency');
    assert.equal(res.status, 503);
    assert.equal(res.body.error, 'Service Unavailable');
    assert.equal(res.body.message, 'Not ready: redis, frozen unreachable');
    assert.deepEqual(res.body.messages, ['redis is unreachable', 'frozen is unreachable']);
    assert.ok(!JSON.stringify(res.body).includes('10.0.0.7'), 'the probe describes the infrastructure');
    assert.ok(log.text().includes('10.0.0.7'), 'the reason is not in the log');
    await request(app).get('/health/live').expect(200);
  });

  it('while draining, ready answers 503 and answers carry Connection: close', async () => {
    const { app, lifecycle } = buildApp();
    lifecycle.draining = true;
    const res = await request(app).get('/health/ready');
    assert.equal(res.status, 503);
    assert.equal(res.body.message, 'Not ready: shutting down');
    assert.equal(res.headers.connection, 'close');
  });

  it('answers 405 with Allow for another method', async () => {
    const { app } = buildApp();
    const res = await request(app).post('/health/ready');
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'GET, HEAD');
  });

  it('match like any Express route (any case, a trailing slash), and leave look-alike paths to the app', async () => {
    const { app } = buildApp();
    const fresh = createBaseApp({ logger: captureLogger('test').logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
    for (const path of ['/healthy', '/metrics-export', '/health-report']) fresh.get(path, (_req, res) => void res.json({ path }));
    finishApp(fresh);
    assert.deepEqual((await request(app).get('/HEALTH/Live').expect(200)).body, { status: 'live' });
    assert.deepEqual((await request(app).get('/health/live/').expect(200)).body, { status: 'live' });
    await request(app).get('/Metrics').expect(200).expect('content-type', /text\/plain/);
    for (const path of ['/healthy', '/metrics-export', '/health-report']) assert.deepEqual((await request(fresh).get(path).expect(200)).body, { path });
    assert.equal((await request(fresh).get('/health/nothing').expect(404)).body.error, 'Not Found');
  });
});

describe('inSequence', () => {
  it('runs each middleware in order as one layer; an error or a rejected promise skips the rest and reaches the error handler', async () => {
    const seen: string[] = [];
    const app = createBaseApp({ logger: captureLogger('test').logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
    app.use(
      inSequence([
        (_req, _res, next) => {
          seen.push('first');
          // null is no error to Express either: the sequence goes on.
          next(null);
        },
        (req, _res, next) => {
          seen.push('second');
          next(req.path === '/fail' ? new BadRequestError('refused by the second') : undefined);
        },
        (_req, _res, next) => {
          seen.push('third');
          next();
        },
      ]),
    );
    app.use(
      inSequence([
        async (req, _res, next) => {
          if (req.path === '/rejects') throw new BadRequestError('an async middleware failed');
          next();
        },
      ]),
    );
    app.get('/ok', (_req, res) => void res.json({ seen }));
    app.get('/fail', (_req, res) => void res.json({ reached: true }));
    finishApp(app);
    assert.deepEqual((await request(app).get('/ok').expect(200)).body, { seen: ['first', 'second', 'third'] });
    seen.length = 0;
    const res = await request(app).get('/fail').expect(400);
    assert.equal(res.body.message, 'refused by the second');
    assert.deepEqual(seen, ['first', 'second']);
    assert.equal((await request(app).get('/rejects').expect(400)).body.message, 'an async middleware failed');
  });

  it('when a middleware throws, synchronously or after an earlier one finished asynchronously, answers in the error shape and keeps serving', async () => {
    const app = createBaseApp({ logger: captureLogger('test').logger, metrics: createMetrics('test'), checks: [], lifecycle: { draining: false } });
    const throwing: RequestHandler = (req) => {
      if (req.path !== '/ok') throw new MethodNotAllowedError(req.method, ['POST']);
    };
    app.use(
      inSequence([
        // Like a body parser: the sequence goes on from a callback, outside Express's own try/catch.
        (req, _res, next) => {
          if (req.path === '/after-async') setImmediate(next);
          else next();
        },
        (req, res, next) => {
          if (req.path === '/ok') res.json({ ok: true });
          else next();
        },
        throwing,
      ]),
    );
    finishApp(app);
    const server = await listen(app, 0);
    try {
      for (let round = 0; round < 2; round++) {
        for (const path of ['/after-async', '/sync']) {
          const res = await fetch(`${server.url}${path}`, { method: 'DELETE' });
          assert.equal(res.status, 405);
          assert.equal(res.headers.get('allow'), 'POST');
          assert.equal(((await res.json()) as { status: number }).status, 405);
        }
      }
      assert.equal((await fetch(`${server.url}/ok`)).status, 200);
    } finally {
      await server.close(1000);
    }
  });
});

describe('listen and close', () => {
  it('lets an in-flight request finish, then refuses new connections', async () => {
    const { app } = buildApp();
    const server = await listen(app, 0);
    const inFlight = fetch(`${server.url}/slow`).then((r) => r.json());
    await sleep(50);
    const closed = server.close(5000);
    assert.deepEqual(await inFlight, { finished: true });
    await closed;
    await assert.rejects(fetch(`${server.url}/things/1`));
  });

  it('cuts requests still running after the drain timeout', async () => {
    const { app } = buildApp();
    const server = await listen(app, 0);
    const inFlight = fetch(`${server.url}/slow`).then(
      () => 'answered',
      () => 'cut',
    );
    await sleep(50);
    const started = Date.now();
    await server.close(100);
    assert.ok(Date.now() - started < 280, 'close waited for the slow request');
    assert.equal(await inFlight, 'cut');
  });
});
