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
  let lateStatus = 200;
  let receivedAt = 0;

  before(async () => {
    testRedis = await createTestRedis('gw-deadline');
    slow = await startUpstream((req, res) => {
      const status = lateStatus;
      receivedAt = Date.now();
      setTimeout(() => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status, path: req.url })), delayMs);
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

  /** A login the upstream answers `status` after 1.5 s: the 300 ms deadline answers 503 first; then a retry with its key once the upstream answered. */
  const lateAnswerThenRetry = async (status: number) => {
    delayMs = 1500;
    lateStatus = status;
    const idempotencyKey = newIdempotencyKey();
    const res = await login(idempotencyKey);
    assert.equal(res.status, 503);
    assert.ok(isErrorBody(res.json()));
    // The upstream's late answer must not break anything.
    await new Promise((resolve) => setTimeout(resolve, 1400));
    delayMs = 0;
    lateStatus = 200;
    return await login(idempotencyKey);
  };

  it('when nothing has answered by the deadline, answers 503 in the error shape; the key is freed when the upstream then fails (a retry is served)', async () => {
    const retry = await lateAnswerThenRetry(500);
    assert.equal(retry.status, 200, retry.body.toString());
  });

  it('when the upstream succeeds after the deadline\'s 503, the key is kept: the change was made, and a retry is the duplicate it would be (409)', async () => {
    const retry = await lateAnswerThenRetry(201);
    assert.equal(retry.status, 409, retry.body.toString());
    assert.equal(retry.json().message, 'Duplicate request detected (X-Idempotency-Key)');
  });

  it('when the upstream refuses after the deadline\'s 503 (a 4xx changed nothing to repeat), the key is freed: the retry gets its own answer', async () => {
    for (const refusal of [401, 409]) {
      const retry = await lateAnswerThenRetry(refusal);
      assert.equal(retry.status, 200, `${refusal}: ${retry.body.toString()}`);
    }
  });

  it('tells the upstream to be done before its own deadline when that comes before UPSTREAM_TIMEOUT_MS (d under the assertion)', async () => {
    delayMs = 0;
    lateStatus = 200;
    const before = Date.now();
    assert.equal((await login(newIdempotencyKey())).status, 200);
    const deadline = Number(/;d=(\d+);/.exec(String(slow.received.at(-1)?.headers['x-internal-assertion']))?.[1]);
    // The 300 ms deadline counts from the gateway's first byte, which came before the upstream's: d is before that
    // deadline (what was left of it, less a fifth), not UPSTREAM_TIMEOUT_MS (5 s) after the send.
    assert.ok(deadline > before && deadline < receivedAt + 300, `d is ${deadline - receivedAt} ms after the upstream got the request`);
  });
});
