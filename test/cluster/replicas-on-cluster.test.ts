import assert from 'node:assert/strict';
import { dropDatabase } from '@platform/service-kit';
import { TEST_POSTGRES_URL, uniqueName } from '@platform/service-kit/testing';
import { type LocalRedisCluster, type StartedProcess, databaseUrl, startDeployable, startLocalRedisCluster } from '@platform/stack';

/**
 * CONTRACT.md part 14 through real processes: two identity and two risk processes on one local Redis
 * Cluster (REDIS_CLUSTER_NODES) and one Postgres start, are ready, serve metrics, and behave as one: a
 * token issued by one identity works at all four, and its logout at one is refused by all at once.
 * (The gateway joins once its admission script is split by slot: README, Redis Cluster.)
 */
describe('two identity and two risk processes on one Redis Cluster (CONTRACT.md part 14)', function () {
  this.timeout(120_000);
  let cluster: LocalRedisCluster;
  const processes: StartedProcess[] = [];
  const run = uniqueName('replicas');
  const databases = [databaseUrl(TEST_POSTGRES_URL, `${run}_identity`), databaseUrl(TEST_POSTGRES_URL, `${run}_risk`)];
  let urls: { identity: string[]; risk: string[] };

  before(async () => {
    cluster = await startLocalRedisCluster();
    const env = {
      PATH: process.env.PATH,
      APP_ENV: 'local',
      LOG_LEVEL: 'warn',
      BCRYPT_COST: '4',
      PASSWORD_HASH_THREADS: '1',
      REDIS_CLUSTER_NODES: cluster.seeds,
      REDIS_KEY_PREFIX: `${run}:`,
      IDENTITY_DATABASE_URL: databases[0],
      RISK_DATABASE_URL: databases[1],
    };
    // One at a time: each creates and migrates its database in local when it is first.
    const identity = [await startDeployable('identity', { env, output: 'capture' })];
    processes.push(...identity);
    identity.push(await startDeployable('identity', { env, output: 'capture' }));
    processes.push(identity[1]!);
    const riskEnv = { ...env, IDENTITY_JWKS_URL: `${identity[0]!.url}/.well-known/jwks.json` };
    const risk = [await startDeployable('risk', { env: riskEnv, output: 'capture' })];
    processes.push(...risk);
    risk.push(await startDeployable('risk', { env: riskEnv, output: 'capture' }));
    processes.push(risk[1]!);
    urls = { identity: identity.map((p) => p.url), risk: risk.map((p) => p.url) };
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    for (const url of databases) await dropDatabase(url).catch(() => undefined);
    await cluster?.stop();
  });

  const all = () => [...urls.identity, ...urls.risk];
  const bearerStatus = (token: string) =>
    Promise.all([
      ...urls.identity.map(async (url) => (await fetch(`${url}/v1/auth/sessions`, { headers: { authorization: `Bearer ${token}` } })).status),
      ...urls.risk.map(async (url) => (await fetch(`${url}/v1/weather-stations/get-cities`, { headers: { authorization: `Bearer ${token}` } })).status),
    ]);

  it('every process is ready and serves its metrics, as on one Redis', async () => {
    for (const url of all()) {
      const ready = await fetch(`${url}/health/ready`);
      assert.equal(ready.status, 200, `${url}: ${await ready.text()}`);
      assert.equal((await fetch(`${url}/metrics`)).status, 200);
    }
  });

  it('a token of one identity works at all four, and its logout at the other is refused by all at once', async () => {
    const login = await fetch(`${urls.identity[0]}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin@example.com', password: 'local-admin-password' }),
    });
    assert.equal(login.status, 200, await login.clone().text());
    const { accessToken } = (await login.json()) as { accessToken: string };
    assert.deepEqual(await bearerStatus(accessToken), [200, 200, 200, 200]);
    const logout = await fetch(`${urls.identity[1]}/v1/auth/logout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jwtToken: accessToken }) });
    assert.equal(logout.status, 200);
    assert.deepEqual(await bearerStatus(accessToken), [401, 401, 401, 401]);
  });
});
