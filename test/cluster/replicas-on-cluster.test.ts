import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { dropDatabase } from '@platform/service-kit/database';
import { TEST_POSTGRES_URL, uniqueName } from '@platform/service-kit/testing';
import { type LocalRedisCluster, type StartedProcess, databaseUrl, freePort, startDeployable, startLocalRedisCluster } from '@platform/stack';
import { send } from '../../gateway/test/support/gateway-harness.ts';
import { type TestSigningKey, signedHeaders } from '../../gateway/test/support/signing-client.ts';
import { generateSigningKeyPem } from '../../services/identity/src/auth/signing-key.ts';
import { headerOf } from '../reliability/support/forge-jwt.ts';

const CLIENT_KEY: TestSigningKey = { keyId: 'replicas', alg: 'hmac-sha256', secret: 'replicas-hmac-secret-0123456789abcdef' };
const ADMIN = { username: 'admin@example.com', password: 'local-admin-password' };
const CITIES = '/v1/weather-stations/get-cities';
/** JWKS_REFRESH_MS (2 s) plus a fetch and a request: how soon every verifier drops a key identity no longer publishes. */
const DROPPED_WITHIN_MS = 5000;

const publicPem = (privatePem: string) => createPublicKey(privatePem).export({ format: 'pem', type: 'spki' }).toString();
const kidOf = (token: string) => headerOf(token).kid;

/**
 * CONTRACT.md part 14 through real processes: two gateways, two identity and two risk processes on one
 * local Redis Cluster (REDIS_CLUSTER_NODES) and one Postgres start, are ready, serve metrics, and behave as
 * one: a token issued by one identity works at all six, its logout at the other is refused by all at once,
 * and a signing-key rotation done one identity at a time (docs/deploy.md, "Rotate the token signing key") is served
 * by all of them together. (Two gateways sharing one client key's quota on the cluster:
 * test/e2e/rate-limits-and-trace-context.test.ts, in `pnpm test:cluster`.)
 */
describe('two gateways, two identity and two risk processes on one Redis Cluster (CONTRACT.md part 14)', function () {
  this.timeout(180_000);
  let cluster: LocalRedisCluster;
  const run = uniqueName('replicas');
  const databases = [databaseUrl(TEST_POSTGRES_URL, `${run}_identity`), databaseUrl(TEST_POSTGRES_URL, `${run}_risk`)];
  const keys = { old: generateSigningKeyPem(), next: generateSigningKeyPem() };
  let env: NodeJS.ProcessEnv;
  const processes: { identity: StartedProcess[]; risk: StartedProcess[]; gateway: StartedProcess[] } = { identity: [], risk: [], gateway: [] };
  /** The gateways' management ports' URLs (/metrics, /health/*). */
  const management: string[] = [];

  before(async () => {
    cluster = await startLocalRedisCluster();
    env = {
      PATH: process.env.PATH,
      APP_ENV: 'local',
      LOG_LEVEL: 'warn',
      BCRYPT_COST: '4',
      PASSWORD_HASH_THREADS: '1',
      REDIS_CLUSTER_NODES: cluster.seeds,
      REDIS_KEY_PREFIX: `${run}:`,
      IDENTITY_DATABASE_URL: databases[0],
      RISK_DATABASE_URL: databases[1],
      // Step 1 of a rotation done: the next key is published (not yet signing), so every verifier knows it early.
      JWT_PRIVATE_KEY: keys.old,
      JWT_PREVIOUS_PUBLIC_KEYS: publicPem(keys.next),
    };
    // One at a time: each creates and migrates its database in local when it is first.
    for (let i = 0; i < 2; i += 1) processes.identity.push(await startDeployable('identity', { env, output: 'capture' }));
    const jwks = `${processes.identity[0]!.url}/.well-known/jwks.json`;
    for (let i = 0; i < 2; i += 1) processes.risk.push(await startDeployable('risk', { env: { ...env, IDENTITY_JWKS_URL: jwks }, output: 'capture' }));
    // Gateway i in front of identity i and risk i, as a Service would spread them.
    for (let i = 0; i < 2; i += 1) {
      const managementPort = await freePort();
      management.push(`http://127.0.0.1:${managementPort}`);
      processes.gateway.push(
        await startDeployable('gateway', {
          env: {
            ...env,
            IDENTITY_URL: processes.identity[i]!.url,
            RISK_URL: processes.risk[i]!.url,
            IDENTITY_JWKS_URL: jwks,
            GATEWAY_MANAGEMENT_PORT: String(managementPort),
            GATEWAY_CLIENT_KEYS: JSON.stringify([CLIENT_KEY]),
          },
          output: 'capture',
        }),
      );
    }
  });
  after(async () => {
    await Promise.all(Object.values(processes).flat().map((p) => p.stop()));
    for (const url of databases) await dropDatabase(url).catch(() => undefined);
    await cluster?.stop();
  });

  const urls = (name: keyof typeof processes) => processes[name].map((p) => p.url);
  /** A bearer token's answer at identity (its sessions) and risk (the cities) directly, then at both gateways. */
  const bearerStatus = (token: string) =>
    Promise.all([
      ...urls('identity').map(async (url) => (await fetch(`${url}/v1/auth/sessions`, { headers: { authorization: `Bearer ${token}` } })).status),
      ...urls('risk').map(async (url) => (await fetch(`${url}${CITIES}`, { headers: { authorization: `Bearer ${token}` } })).status),
      ...urls('gateway').map(async (url) => (await send(url, 'GET', CITIES, signedHeaders('GET', CITIES, { key: CLIENT_KEY, bearer: token }))).status),
    ]);
  const loginAt = async (identityUrl: string): Promise<string> => {
    const login = await fetch(`${identityUrl}/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) });
    assert.equal(login.status, 200, await login.clone().text());
    return ((await login.json()) as { accessToken: string }).accessToken;
  };
  /** Stops identity `i` (it drains) and starts it on the same port with these keys: one step of a rolling rotation. */
  const restartIdentity = async (i: number, signing: string, previous: string) => {
    const old = processes.identity[i]!;
    await old.stop();
    processes.identity[i] = await startDeployable('identity', { env: { ...env, JWT_PRIVATE_KEY: signing, JWT_PREVIOUS_PUBLIC_KEYS: previous }, port: Number(new URL(old.url).port), output: 'capture' });
  };

  it('every process is ready and serves its metrics, as on one Redis', async () => {
    for (const url of [...urls('identity'), ...urls('risk'), ...management]) {
      const ready = await fetch(`${url}/health/ready`);
      assert.equal(ready.status, 200, `${url}: ${await ready.text()}`);
      assert.equal((await fetch(`${url}/metrics`)).status, 200);
    }
  });

  it('a token of one identity works at all six, and its logout at the other is refused by all at once', async () => {
    const accessToken = await loginAt(urls('identity')[0]!);
    assert.deepEqual(await bearerStatus(accessToken), [200, 200, 200, 200, 200, 200]);
    const logout = await fetch(`${urls('identity')[1]}/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jwtToken: accessToken }) });
    assert.equal(logout.status, 200);
    assert.deepEqual(await bearerStatus(accessToken), [401, 401, 401, 401, 401, 401]);
  });

  it('a signing-key rotation, one identity at a time: tokens of both keys served by all six throughout, the old key refused by all once withdrawn', async () => {
    const ofOldKey = await loginAt(urls('identity')[0]!);
    // Step 2 on one identity: it signs with the next key and still publishes the old one.
    await restartIdentity(1, keys.next, publicPem(keys.old));
    const ofNextKey = await loginAt(urls('identity')[1]!);
    assert.notEqual(kidOf(ofNextKey), kidOf(ofOldKey));
    assert.deepEqual(await bearerStatus(ofOldKey), [200, 200, 200, 200, 200, 200], 'a token of the old key, mid-rotation');
    assert.deepEqual(await bearerStatus(ofNextKey), [200, 200, 200, 200, 200, 200], 'a token of the next key, mid-rotation');
    // Step 2 on the other: both sign with the next key.
    await restartIdentity(0, keys.next, publicPem(keys.old));
    assert.equal(kidOf(await loginAt(urls('identity')[0]!)), kidOf(ofNextKey));
    assert.deepEqual(await bearerStatus(ofOldKey), [200, 200, 200, 200, 200, 200]);
    // Step 3: the old key withdrawn from both (a leak, say): every verifier refuses its tokens within the refresh.
    await restartIdentity(0, keys.next, '');
    await restartIdentity(1, keys.next, '');
    const withdrawn = Date.now();
    let statuses = await bearerStatus(ofOldKey);
    while (statuses.some((status) => status !== 401) && Date.now() - withdrawn < DROPPED_WITHIN_MS) {
      await sleep(200);
      statuses = await bearerStatus(ofOldKey);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 401], `the old key still accepted ${Date.now() - withdrawn} ms after its withdrawal`);
    assert.deepEqual(await bearerStatus(ofNextKey), [200, 200, 200, 200, 200, 200]);
  });
});
