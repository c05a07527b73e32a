import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isErrorBody } from '@platform/errors';
import { CALLER_GONE_REASON } from '@platform/service-kit';
import { dropDatabase } from '@platform/service-kit/database';
import { TEST_POSTGRES_URL, TEST_REDIS_URL, uniqueName } from '@platform/service-kit/testing';
import { type FakeUpstream, startUpstream } from '../../gateway/test/support/fake-upstream.ts';
import { send } from '../../gateway/test/support/gateway-harness.ts';
import { type TestSigningKey, newIdempotencyKey, signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { eventually } from './support/ports.ts';
import { type ServiceProcess, startProcess } from './support/service-process.ts';
import { type TcpProxy, startTcpProxy } from './support/tcp-proxy.ts';

const KEY: TestSigningKey = { keyId: 'lifecycle-hmac', alg: 'hmac-sha256', secret: 'lifecycle-hmac-secret-0123456789' };
const CLIENT_KEYS = JSON.stringify([{ keyId: KEY.keyId, alg: KEY.alg, secret: KEY.secret }]);
const admin = { username: 'lifecycle-admin@example.com', password: 'lifecycle-admin-password' };
const loginBody = Buffer.from(JSON.stringify(admin));

const signedLogin = (gatewayUrl: string, idempotencyKey = newIdempotencyKey()) =>
  send(gatewayUrl, 'POST', '/v1/auth/login', signedHeaders('POST', '/v1/auth/login', { key: KEY, body: loginBody, idempotencyKey }), loginBody);

/**
 * A login on a connection of its own, with `Expect: 100-continue`: `inFlight` once identity has read its
 * head (Node's server answers 100 Continue only then) and the body is in the socket, `status` with the
 * answer. Only then is it in flight at identity: written by the test is not enough, since a busy machine may
 * leave a connection unaccepted until after the SIGTERM the test sends.
 */
function loginInFlight(url: string): { inFlight: Promise<void>; status: Promise<number> } {
  let inFlight!: () => void;
  const read = new Promise<void>((resolve) => {
    inFlight = resolve;
  });
  const status = new Promise<number>((resolve, reject) => {
    const headers = { 'content-type': 'application/json', 'content-length': loginBody.length, expect: '100-continue' };
    const req = request(`${url}/v1/auth/login`, { method: 'POST', agent: false, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.once('continue', () => req.end(loginBody, inFlight));
    req.flushHeaders();
  });
  return { inFlight: read, status };
}

/** True once a new connection to `url` is refused: the process stopped accepting. */
const refusesConnections = (url: string) =>
  eventually(
    () =>
      fetch(`${url}/health/live`).then(
        () => false,
        () => true,
      ),
    2000,
    20,
  );

describe('processes under faults of their own (real processes)', function () {
  this.timeout(90_000);
  const shared = new URL(TEST_POSTGRES_URL);
  let proxy: TcpProxy;
  let keyDir: string;
  let riskStub: FakeUpstream;
  const databases: string[] = [];
  const started: ServiceProcess[] = [];

  /** An identity process on a fresh database behind the proxy; `port` restarts it where it was. */
  let identityEnv: Record<string, string>;
  const startIdentity = async (extra: Record<string, string> = {}, port?: number) => {
    const service = await startProcess('identity', { ...identityEnv, ...extra }, port);
    started.push(service);
    return service;
  };

  before(async () => {
    proxy = await startTcpProxy({ host: shared.hostname, port: Number(shared.port || 5432) });
    keyDir = await mkdtemp(join(tmpdir(), 'lifecycle-'));
    riskStub = await startUpstream();
    const direct = new URL(TEST_POSTGRES_URL);
    direct.pathname = `/${uniqueName('lifecycle_identity')}`;
    databases.push(direct.toString());
    const viaProxy = new URL(direct);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    identityEnv = {
      IDENTITY_DATABASE_URL: viaProxy.toString(),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `${uniqueName('lifecycle')}:`,
      BOOTSTRAP_ADMIN_USERNAME: admin.username,
      BOOTSTRAP_ADMIN_PASSWORD: admin.password,
      BCRYPT_COST: '4',
      PASSWORD_HASH_THREADS: '1',
      JWT_LOCAL_KEY_FILE: join(keyDir, 'jwt.pem'),
    };
  });
  after(async () => {
    for (const service of started) await service.kill();
    await proxy?.close();
    await riskStub?.close();
    for (const url of databases) await dropDatabase(url);
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
  });

  const startGateway = async (identityUrl: string, risk = riskStub, extra: Record<string, string> = {}) => {
    const gateway = await startProcess('gateway', {
      ...extra,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: identityEnv.REDIS_KEY_PREFIX!,
      IDENTITY_URL: identityUrl,
      RISK_URL: risk.url,
      IDENTITY_JWKS_URL: `${identityUrl}/.well-known/jwks.json`,
      GATEWAY_CLIENT_KEYS: CLIENT_KEYS,
    });
    started.push(gateway);
    // Live is not ready: until its Redis client connects, the gateway fails closed (503), which these tests do not test.
    assert.ok(await eventually(async () => (await fetch(`${gateway.url}/health/ready`)).status === 200, 10_000, 50), 'the gateway never got ready');
    return gateway;
  };

  it('when the upstream is killed mid-request, the gateway answers 502 and releases the idempotency key', async () => {
    const identity = await startIdentity();
    const gateway = await startGateway(identity.url);
    assert.equal((await signedLogin(gateway.url)).status, 200);

    // A frozen database holds the login inside identity, so it is surely in flight when identity dies.
    proxy.freeze();
    const idempotencyKey = newIdempotencyKey();
    const pending = signedLogin(gateway.url, idempotencyKey);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await identity.kill();
    const answer = await pending;
    assert.equal(answer.status, 502, answer.body.toString());
    assert.ok(isErrorBody(answer.json()));
    await proxy.restore();

    await startIdentity({}, identity.port);
    const retry = await signedLogin(gateway.url, idempotencyKey);
    assert.equal(retry.status, 200, `the key was not released: ${retry.body.toString()}`);
  });

  it('when identity stalls past the gateway\'s upstream timeout, the 504 means nothing was done: identity, woken, refuses the request it then reads, and a retry with the same idempotency key creates the user once', async () => {
    // Its request lines are info lines: the one of the late request is what the test waits for.
    const identity = await startIdentity({ LOG_LEVEL: 'info' });
    const gateway = await startGateway(identity.url, riskStub, { UPSTREAM_TIMEOUT_MS: '1500' });
    const login = await signedLogin(gateway.url);
    assert.equal(login.status, 200, login.body.toString());
    const bearer = (login.json() as { accessToken: string }).accessToken;
    const userBody = (username: string) => Buffer.from(JSON.stringify({ username, firstName: 'S', lastName: 'T', locale: 'en_US', timezone: 'UTC', roles: ['STANDARD_USER'], status: 'ACTIVE' }));
    const createUser = (body: Buffer, idempotencyKey = newIdempotencyKey()) =>
      send(gateway.url, 'POST', '/v1/users/create', signedHeaders('POST', '/v1/users/create', { key: KEY, body, idempotencyKey, bearer }), body);
    // One user created first: the gateway then holds identity's token keys, which it could not fetch from a stopped identity.
    const warm = await createUser(userBody(`warm-${Date.now()}@example.com`));
    assert.equal(warm.status, 201, warm.body.toString());
    const body = userBody(`stalled-${Date.now()}@example.com`);
    const idempotencyKey = newIdempotencyKey();
    const create = () => createUser(body, idempotencyKey);

    // The request waits in identity's socket while identity is stopped: the gateway gives up at 1.5 s.
    identity.child.kill('SIGSTOP');
    let first: Awaited<ReturnType<typeof create>>;
    try {
      first = await create();
    } finally {
      identity.child.kill('SIGCONT');
    }
    assert.equal(first.status, 504, first.body.toString());
    // Identity, woken, reads the request and writes its line (under the gateway's request id) once it is done with it.
    const requestId = String(first.headers['x-request-id']);
    const lineOf = () => identity.output().split('\n').find((line) => line.includes(requestId) && line.includes('"msg":"POST '));
    assert.ok(await eventually(async () => lineOf() !== undefined, 5000, 20), `identity never answered the late request:\n${identity.output().slice(-3000)}`);
    const retry = await create();
    assert.equal(retry.status, 201, `the stalled request was carried out after its 504: ${retry.body.toString()}`);
    assert.match(lineOf() ?? '', /"statusCode":503/);
    assert.ok(lineOf()?.includes(CALLER_GONE_REASON), lineOf());
  });

  it('when the gateway gets SIGTERM under load, finishes the requests in flight, accepts no new ones, and exits 0', async () => {
    const slow = await startUpstream((req, res) => {
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path: req.url })), 800);
    });
    try {
      // The slow stub stands in for identity: every login stays in flight for 800 ms.
      const gateway = await startGateway(slow.url);
      const inFlight = Array.from({ length: 8 }, () => signedLogin(gateway.url));
      assert.ok(await eventually(async () => slow.received.length === 8, 5000, 10), 'the load never reached the upstream');
      gateway.child.kill('SIGTERM');
      assert.ok(await refusesConnections(gateway.url), 'still accepting connections after SIGTERM');
      const answers = await Promise.all(inFlight);
      assert.deepEqual(answers.map((a) => a.status), Array(8).fill(200));
      assert.equal(await gateway.exited, 0, gateway.output());
      assert.equal(slow.received.length, 8);
    } finally {
      await slow.close();
    }
  });

  it('when identity gets SIGTERM under login load, finishes the logins in flight, accepts no new ones, and exits 0', async () => {
    // A realistic hash cost on one worker thread keeps the logins queued for about a second. The deadline and
    // the drain far: a loaded machine slows the hashing thread, which yields to every other, several times, and
    // eight hashes in a row could then outlast the default 8 s (a 503 of the deadline, not of the shutdown).
    const identity = await startIdentity({ BCRYPT_COST: '11', REQUEST_DEADLINE_MS: '60000', DRAIN_TIMEOUT_MS: '60000' }, undefined);
    const logins = Array.from({ length: 8 }, () => loginInFlight(identity.url));
    // Every request read by identity (its head answered 100 Continue) and its body sent: in flight, not on its way.
    await Promise.all(logins.map((login) => login.inFlight));
    identity.child.kill('SIGTERM');
    assert.ok(await refusesConnections(identity.url), 'still accepting connections after SIGTERM');
    const statuses = await Promise.all(logins.map((login) => login.status));
    assert.deepEqual(statuses, Array(8).fill(200));
    assert.equal(await identity.exited, 0, identity.output());
  });
});
