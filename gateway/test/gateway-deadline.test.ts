import assert from 'node:assert/strict';
import { type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { isErrorBody } from '@platform/errors';
import { type FakeUpstream, startUpstream } from './support/fake-upstream.ts';
import { type TestGateway, send, startGateway } from './support/gateway-harness.ts';
import { newIdempotencyKey, signedHeaders } from './support/signing-client.ts';

describe('gateway request deadline (REQUEST_DEADLINE_MS)', () => {
  let testRedis: TestRedis;
  let slow: FakeUpstream;
  let gw: TestGateway;
  let delayMs = 1500;

  before(async () => {
    testRedis = await createTestRedis('gw-deadline');
    slow = await startUpstream((req, res) => {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path: req.url })), delayMs);
    });
    gw = await startGateway({ redis: testRedis.redis, identity: slow, env: { REQUEST_DEADLINE_MS: '300', UPSTREAM_TIMEOUT_MS: '5000' } });
  });
  after(async () => {
    await gw.close();
    await slow.close();
    await testRedis.close();
  });

  const body = Buffer.from('{"username":"a@example.com","password":"secret-1"}');
  const login = (idempotencyKey: string) =>
    send(gw.url, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: gw.keys.hmac, body, idempotencyKey }), body);

  it('when nothing has answered by the deadline, answers 503 in the error shape and frees the idempotency key', async () => {
    const idempotencyKey = newIdempotencyKey();
    // The upstream would answer 200 after 1.5 s: a 503 can only come from the 300 ms deadline.
    const res = await login(idempotencyKey);
    assert.equal(res.status, 503);
    assert.ok(isErrorBody(res.json()));
    // The upstream's late answer must not break anything; a retry with the same key is allowed (a 5xx).
    await new Promise((resolve) => setTimeout(resolve, 1400));
    delayMs = 0;
    const retry = await login(idempotencyKey);
    assert.equal(retry.status, 200, retry.body.toString());
  });
});
