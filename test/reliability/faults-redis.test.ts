import assert from 'node:assert/strict';
import { type TestIssuer, createTestIssuer, freshEnvironment } from '@platform/auth/testing';
import { type Redis, closeRedis, createLogger, createRedis, waitForRedis } from '@platform/service-kit';
import { isErrorBody } from '@platform/errors';
import { type FakeUpstream, startUpstream } from '../../gateway/test/support/fake-upstream.ts';
import { type Answer, send } from '../../gateway/test/support/gateway-harness.ts';
import { type TestSigningKey, newIdempotencyKey, signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { eventually } from './support/ports.ts';
import { type PrivateRedis, startPrivateRedis } from '@platform/stack';
import { type ServiceProcess, startProcess } from './support/service-process.ts';

const KEY: TestSigningKey = { keyId: 'faults-hmac', alg: 'hmac-sha256', secret: 'faults-hmac-secret-0123456789' };
/** CONTRACT.md part 3: without Redis the gateway answers 503 within 1 s. */
const FAIL_FAST_MS = 1000;

describe('gateway when Redis dies or freezes (real processes)', function () {
  this.timeout(60_000);
  let redis: PrivateRedis;
  let issuer: TestIssuer;
  let jwks: { url: string; close: () => Promise<void> };
  let identity: FakeUpstream;
  let risk: FakeUpstream;
  let gateway: ServiceProcess;
  /** On the gateway's key prefix: plays identity's part of re-seeding the revocation mirror (CONTRACT.md part 13). */
  let mirror: Redis;

  before(async () => {
    redis = await startPrivateRedis();
    mirror = createRedis({ url: redis.url, keyPrefix: 'platform:', logger: createLogger({ service: 'test', level: 'silent' }) });
    assert.ok(await waitForRedis(mirror, 5000));
    await freshEnvironment(mirror);
    issuer = createTestIssuer();
    jwks = await issuer.serveJwks();
    identity = await startUpstream();
    risk = await startUpstream();
    gateway = await startProcess('gateway', {
      REDIS_URL: redis.url,
      IDENTITY_URL: identity.url,
      RISK_URL: risk.url,
      IDENTITY_JWKS_URL: jwks.url,
      TOKEN_ISSUER: issuer.issuer,
      JWT_AUDIENCE: issuer.audience,
      GATEWAY_CLIENT_KEYS: JSON.stringify([{ keyId: KEY.keyId, alg: KEY.alg, secret: KEY.secret }]),
    });
    // Live is not ready: on a loaded machine the Redis client may connect a moment after the port opens.
    assert.ok(await eventually(async () => (await fetch(`${gateway.url}/health/ready`)).status === 200, 10_000, 50), 'the gateway never got ready');
  });
  after(async () => {
    await gateway?.kill();
    if (mirror !== undefined) await closeRedis(mirror);
    await redis?.stop();
    await Promise.all([jwks?.close(), identity?.close(), risk?.close()]);
  });

  const loginBody = Buffer.from('{"username":"a@example.com","password":"secret-1"}');
  const login = (idempotencyKey = newIdempotencyKey()) =>
    send(gateway.url, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: KEY, body: loginBody, idempotencyKey }), loginBody);
  const cities = () => {
    const target = '/v1/weather-stations/get-cities';
    return send(gateway.url, 'GET', target, signedHeaders('GET', target, { key: KEY, bearer: issuer.sign() }));
  };
  const proxied = () => identity.received.length + risk.received.length;
  const ready = async () => (await fetch(`${gateway.url}/health/ready`)).status;

  /** Sends each request, asserting a 503 in the error shape within FAIL_FAST_MS and nothing proxied. */
  async function assertFailsClosed(requests: ReadonlyArray<() => Promise<Answer>>): Promise<void> {
    const before = proxied();
    for (const call of requests) {
      const started = performance.now();
      const res = await call();
      const took = performance.now() - started;
      assert.equal(res.status, 503, res.body.toString());
      assert.ok(isErrorBody(res.json()), res.body.toString());
      assert.ok(took < FAIL_FAST_MS, `answered after ${Math.round(took)} ms`);
    }
    assert.equal(proxied(), before, 'a request was proxied without its Redis checks');
  }

  // A restarted Redis is empty: without identity here, the test re-seeds the (empty) revocation mirror itself.
  const recovers = () =>
    eventually(
      async () => {
        await freshEnvironment(mirror).catch(() => undefined);
        return (await login()).status === 200 && (await cities()).status === 200;
      },
      15_000,
      200,
    );

  it('when Redis is up, proxies signed requests', async () => {
    assert.equal((await login()).status, 200);
    assert.equal((await cities()).status, 200);
    assert.equal(await ready(), 200);
  });

  it('when Redis is killed (SIGKILL), answers 503 within 1 s, proxies nothing, is not ready, and recovers by itself when Redis returns', async () => {
    await redis.kill();
    await assertFailsClosed([login, cities, login, cities, login]);
    assert.equal(await ready(), 503);
    await redis.restart();
    assert.ok(await recovers(), 'the gateway did not recover after Redis came back');
    assert.equal(await ready(), 200);
  });

  it('when Redis is frozen (SIGSTOP), answers 503 within 1 s, proxies nothing, and recovers when it resumes', async () => {
    redis.freeze();
    try {
      await assertFailsClosed([login, cities, login, cities]);
      assert.equal(await ready(), 503);
    } finally {
      redis.thaw();
    }
    assert.ok(await recovers(), 'the gateway did not recover after Redis resumed');
  });

  it('when Redis is frozen under steady load (a request every 100 ms), every answer is a 503 within 1 s', async () => {
    redis.freeze();
    try {
      const started: number[] = [];
      const answers = await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          await new Promise((resolve) => setTimeout(resolve, i * 100));
          started[i] = performance.now();
          const res = await (i % 2 === 0 ? login() : cities());
          return { status: res.status, took: performance.now() - started[i]! };
        }),
      );
      assert.deepEqual(answers.map((a) => a.status), Array(12).fill(503));
      const slowest = Math.max(...answers.map((a) => a.took));
      assert.ok(slowest < FAIL_FAST_MS, `slowest answer after ${Math.round(slowest)} ms: ${answers.map((a) => Math.round(a.took)).join(', ')}`);
    } finally {
      redis.thaw();
    }
    assert.ok(await recovers());
  });

  it('when a request failed with 503 because Redis was frozen, its idempotency key is free again once Redis resumes', async () => {
    const idempotencyKey = newIdempotencyKey();
    redis.freeze();
    try {
      assert.equal((await login(idempotencyKey)).status, 503);
    } finally {
      redis.thaw();
    }
    assert.ok(await recovers());
    // The claim was written to the frozen server and ran when it resumed: the key must not stay taken.
    const retry = await login(idempotencyKey);
    assert.equal(retry.status, 200, retry.body.toString());
  });
});
