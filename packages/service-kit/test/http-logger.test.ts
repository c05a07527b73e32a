import assert from 'node:assert/strict';
import request from 'supertest';
import { createBaseApp, createMetrics, finishApp, requestLog } from '../src/index.ts';
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
  finishApp(app);
  return { app, log };
}

describe('request log line (httpLogger)', () => {
  it('when the answer is below 500, holds exactly the allow-listed fields', async () => {
    const { app, log } = buildApp();
    await request(app).get('/fine?x=1').set('X-Request-Id', 'req-fine').set('Authorization', 'Bearer secret-token');
    const line = log.lines().find((l) => l.msg === 'GET 200');
    assert.ok(line, log.text());
    assert.deepEqual(Object.keys(line).sort(), ['level', 'msg', 'req', 'res', 'responseTime', 'service', 'time', 'traceId']);
    assert.deepEqual(Object.keys(line.req as object).sort(), ['clientRequestId', 'id', 'method', 'remoteAddress', 'url']);
    assert.equal((line.req as { url: string }).url, '/fine?x=1');
    assert.equal((line.req as { clientRequestId: string }).clientRequestId, 'req-fine');
    assert.equal(line.level, 'info');
    assert.ok(!log.text().includes('secret-token'));
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
});
