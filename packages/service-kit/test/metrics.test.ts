import assert from 'node:assert/strict';
import request from 'supertest';
import { type ReadinessCheck, createBaseApp, createMetrics, finishApp } from '../src/index.ts';
import { captureLogger } from '../src/testing/index.ts';

describe('health as metrics (process_ready, readiness_changes_total, dependency_up)', () => {
  it('counts each flip of the readiness answer and reports the last one', async () => {
    let up = true;
    const check: ReadinessCheck = { name: 'postgres', check: async () => (up ? undefined : Promise.reject(new Error('down'))) };
    const metrics = createMetrics('test');
    const app = finishApp(createBaseApp({ logger: captureLogger('test').logger, metrics, checks: [check], lifecycle: { draining: false } }));
    const statuses: number[] = [];
    for (const state of [true, true, false, false, true, false]) {
      up = state;
      statuses.push((await request(app).get('/health/ready')).status);
    }
    assert.deepEqual(statuses, [200, 200, 503, 503, 200, 503]);
    const text = await metrics.registry.metrics();
    assert.match(text, /^readiness_changes_total\{service="test"\} 3$/m);
    assert.match(text, /^process_ready\{service="test"\} 0$/m);
  });

  it('checks every watched dependency at each scrape: up, down, or silent past 1 s', async () => {
    const metrics = createMetrics('test');
    let redisUp = true;
    metrics.watchDependencies([
      { name: 'redis', check: async () => (redisUp ? undefined : Promise.reject(new Error('down'))) },
      { name: 'postgres', check: () => new Promise(() => undefined) },
    ]);
    const first = await metrics.registry.metrics();
    assert.match(first, /^dependency_up\{dependency="redis",service="test"\} 1$/m);
    assert.match(first, /^dependency_up\{dependency="postgres",service="test"\} 0$/m);
    redisUp = false;
    assert.match(await metrics.registry.metrics(), /^dependency_up\{dependency="redis",service="test"\} 0$/m);
  });
});
