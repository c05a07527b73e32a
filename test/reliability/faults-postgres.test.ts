import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestIssuer, createTestIssuer } from '@platform/auth/testing';
import { isErrorBody } from '@platform/errors';
import { dropDatabase } from '@platform/service-kit/database';
import { TEST_POSTGRES_URL, TEST_REDIS_URL, uniqueName } from '@platform/service-kit/testing';
import { eventually } from './support/ports.ts';
import { type ServiceProcess, startProcess } from './support/service-process.ts';
import { type TcpProxy, startTcpProxy } from './support/tcp-proxy.ts';

// The shared Postgres must never be killed: every fault goes through a proxy in front of it
// (freeze = a hung server, kill = a dead one), so only the connections of the process under test suffer.
const shared = new URL(TEST_POSTGRES_URL);

/** The URL of a fresh database `name` reached through `proxy`, and the direct one to drop it. */
function databaseUrls(proxy: TcpProxy, name: string): { viaProxy: string; direct: string } {
  const direct = new URL(TEST_POSTGRES_URL);
  direct.pathname = `/${name}`;
  const viaProxy = new URL(direct);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  return { viaProxy: viaProxy.toString(), direct: direct.toString() };
}

/** Fast-failing database limits for the process under test, and its deadline. */
const LIMITS = { REQUEST_DEADLINE_MS: '1500', DB_CONNECT_TIMEOUT_MS: '500', DB_STATEMENT_TIMEOUT_MS: '700' };
const DEADLINE_MS = 1500;
/** Scheduling slack on a busy 2-core CI machine; the answer must still come well before a hang would. */
const MARGIN_MS = 750;

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('identity and risk when Postgres dies or freezes (real processes, Postgres behind a TCP proxy)', function () {
  this.timeout(90_000);
  const admin = { username: 'faults-admin@example.com', password: 'faults-admin-password' };
  let proxy: TcpProxy;
  let keyDir: string;
  let issuer: TestIssuer;
  let jwks: { url: string; close: () => Promise<void> };
  let identity: ServiceProcess;
  let risk: ServiceProcess;
  const databases: string[] = [];

  before(async () => {
    proxy = await startTcpProxy({ host: shared.hostname, port: Number(shared.port || 5432) });
    keyDir = await mkdtemp(join(tmpdir(), 'faults-'));
    issuer = createTestIssuer();
    jwks = await issuer.serveJwks();
    const identityDb = databaseUrls(proxy, uniqueName('faults_identity'));
    const riskDb = databaseUrls(proxy, uniqueName('faults_risk'));
    databases.push(identityDb.direct, riskDb.direct);
    const common = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `${uniqueName('faults')}:`, ...LIMITS };
    [identity, risk] = await Promise.all([
      startProcess('identity', {
        ...common,
        IDENTITY_DATABASE_URL: identityDb.viaProxy,
        BOOTSTRAP_ADMIN_USERNAME: admin.username,
        BOOTSTRAP_ADMIN_PASSWORD: admin.password,
        BCRYPT_COST: '4',
        PASSWORD_HASH_THREADS: '1',
        JWT_LOCAL_KEY_FILE: join(keyDir, 'jwt.pem'),
      }),
      startProcess('risk', {
        ...common,
        LOG_LEVEL: 'info',
        RISK_DATABASE_URL: riskDb.viaProxy,
        RISK_INDEX_POLL_MS: '200',
        IDENTITY_JWKS_URL: jwks.url,
        TOKEN_ISSUER: issuer.issuer,
        JWT_AUDIENCE: issuer.audience,
      }),
    ]);
    // Identity is ready once its keeper has found (or re-seeded) the revocation mirror the risk verifier reads.
    assert.ok(await eventually(async () => (await fetch(`${identity.url}/health/ready`)).status === 200, 20_000, 100), identity.output());
  });
  after(async () => {
    await Promise.all([identity?.kill(), risk?.kill()]);
    await proxy?.close();
    await jwks?.close();
    for (const url of databases) await dropDatabase(url);
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
  });

  const login = () => post(`${identity.url}/v1/auth/login`, admin);
  const refresh = () => post(`${identity.url}/v1/auth/refresh`, { refreshToken: 'not-a-real-refresh-token' });
  const stationCalls = () => {
    const headers = { authorization: `Bearer ${issuer.sign()}`, 'content-type': 'application/json' };
    return [
      fetch(`${risk.url}/v1/weather-stations/get-cities`, { headers }),
      fetch(`${risk.url}/v1/weather-stations/by/id/17130`, { headers }),
      fetch(`${risk.url}/v1/weather-stations/by/city-district`, { method: 'POST', headers, body: JSON.stringify({ city: 'ankara', district: 'çankaya' }) }),
    ];
  };
  const ready = async (service: ServiceProcess) => (await fetch(`${service.url}/health/ready`)).status;
  const countOf = (text: string, needle: string) => text.split(needle).length - 1;

  /** Identity answers 503 in the error shape within its deadline, for a read and for a transaction. */
  async function assertIdentityFailsFast(): Promise<void> {
    for (const call of [login, refresh, login]) {
      const started = performance.now();
      const res = await call();
      const took = performance.now() - started;
      const body = (await res.json()) as unknown;
      assert.equal(res.status, 503, JSON.stringify(body));
      assert.ok(isErrorBody(body), JSON.stringify(body));
      assert.ok(took < DEADLINE_MS + MARGIN_MS, `answered after ${Math.round(took)} ms`);
    }
    assert.equal(await ready(identity), 503);
  }

  /** Risk keeps answering from its index while its database is unusable. */
  async function assertRiskServes(): Promise<void> {
    for (const res of await Promise.all(stationCalls())) assert.equal(res.status, 200, await res.text());
    assert.equal(await ready(risk), 200);
  }

  const identityRecovers = () => eventually(async () => (await login()).status === 200 && (await ready(identity)) === 200, 15_000, 200);
  const riskReloadsAgain = (recoveries: number) =>
    eventually(async () => countOf(risk.output(), 'station index reload works again') > recoveries, 15_000, 100);

  it('when Postgres is up, identity logs in and risk serves stations', async () => {
    // The first requests of a cold process (JIT, worker threads, first connections) may outlast the short deadline.
    assert.ok(await eventually(async () => (await login()).status === 200, 10_000), identity.output());
    assert.ok(await eventually(async () => (await ready(risk)) === 200, 10_000), risk.output());
    await assertRiskServes();
  });

  it('when Postgres is killed, identity answers 503 within its deadline, risk keeps serving from its index, and both recover', async () => {
    const recoveries = countOf(risk.output(), 'station index reload works again');
    await proxy.kill();
    try {
      await assertIdentityFailsFast();
      // Long enough for several failed index polls.
      await new Promise((resolve) => setTimeout(resolve, 600));
      await assertRiskServes();
      assert.match(risk.output(), /station index reload failed; serving the previous index/);
    } finally {
      await proxy.restore();
    }
    assert.ok(await identityRecovers(), `identity did not recover:\n${identity.output()}`);
    assert.ok(await riskReloadsAgain(recoveries), 'risk never reloaded its index after Postgres returned');
  });

  it('when Postgres is frozen, identity answers 503 within its deadline, risk keeps serving from its index, and both recover', async () => {
    const recoveries = countOf(risk.output(), 'station index reload works again');
    const failures = countOf(risk.output(), 'station index reload failed');
    proxy.freeze();
    try {
      await assertIdentityFailsFast();
      await assertRiskServes();
      // A frozen poll fails by the client's query timeout (statement timeout + 1 s), logged once per outage.
      assert.ok(await eventually(async () => countOf(risk.output(), 'station index reload failed') > failures, 5000), 'no index poll failed');
      await assertRiskServes();
    } finally {
      await proxy.restore();
    }
    assert.ok(await identityRecovers(), `identity did not recover:\n${identity.output()}`);
    assert.ok(await riskReloadsAgain(recoveries), 'risk never reloaded its index after Postgres resumed');
  });
});
