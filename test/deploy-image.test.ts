import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { dropDatabase } from '@platform/service-kit/database';
import { TEST_POSTGRES_URL, TEST_REDIS_URL, uniqueName } from '@platform/service-kit/testing';
import { signedHeaders } from '../gateway/test/support/signing-client.ts';
import { DEPLOYABLES, type DeployableName, REPO_ROOT, imageEnv, imageNodeArgs, parseDockerfile, readDockerfile } from './deploy-support/deployables.ts';
import { type StartedProcess, freePort, startProcess, untilOk } from '@platform/stack';

// Without a Docker engine, each image is laid out as its Dockerfile's runtime stage does it: the
// `pnpm deploy` output of its package, plus the runtime stage's other COPY lines, with the image's ENV.
// Run after `pnpm build` (as `pnpm test` does): pnpm deploy copies the compiled dist/.

/** `/app/…` of the image, in the folder standing in for it. */
const inApp = (app: string, path: string) => (path.startsWith('/app/') ? join(app, path.slice('/app/'.length)) : path);

async function layOutImage(work: string, name: DeployableName): Promise<string> {
  const out = join(work, name, 'out');
  await promisify(execFile)('pnpm', ['--filter', `@platform/${name}`, 'deploy', '--prod', '--legacy', out], { cwd: REPO_ROOT });
  const app = join(work, name, 'app');
  for (const { op, args } of parseDockerfile(readDockerfile(REPO_ROOT, DEPLOYABLES.find((d) => d.name === name)!)).at(-1)!.instructions) {
    if (op !== 'COPY') continue;
    const [, source, destination] = /^--from=build\s+(\S+)\s+(\S+)$/.exec(args) ?? [];
    assert.ok(source && destination, `unexpected COPY ${args}`);
    const target = destination === './' ? app : inApp(app, destination);
    mkdirSync(dirname(target), { recursive: true });
    cpSync(source === '/out' ? out : join(REPO_ROOT, source.slice('/repo/'.length)), target, { recursive: true });
  }
  return app;
}

describe('images, laid out without Docker (pnpm deploy + each Dockerfile runtime stage)', function () {
  this.timeout(120_000);
  let work = '';
  const apps = new Map<DeployableName, string>();

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'images-'));
    const laidOut = await Promise.all(DEPLOYABLES.map(async (d) => [d.name, await layOutImage(work, d.name)] as const));
    for (const [name, app] of laidOut) apps.set(name, app);
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it('each holds its entry point, its scripts and the files it reads at run time, and no dev dependencies', () => {
    const expected: Record<DeployableName, string[]> = {
      gateway: ['dist/src/index.js', 'openapi/identity.yaml', 'openapi/risk.yaml'],
      identity: ['dist/src/index.js', 'dist/src/migrate.js', 'dist/src/passwords/password-worker.js', 'openapi.yaml'],
      risk: ['dist/src/index.js', 'dist/src/migrate.js', 'dist/src/seed.js', 'openapi.yaml', 'data/stations.csv', 'data/mgm_centers.csv', 'data/provinces_districts.csv'],
    };
    for (const d of DEPLOYABLES) {
      const app = apps.get(d.name)!;
      for (const file of expected[d.name]) assert.ok(existsSync(join(app, file)), `${d.name} image lacks ${file}`);
      // Every deployable checks revocations: the Lua that pnpm build copies beside the auth and service-kit modules.
      for (const lua of [['auth', 'revocations', 'lua', 'buckets.lua'], ['service-kit', 'lua', 'slot-ledger.lua']]) {
        const [pkg, ...path] = lua as [string, ...string[]];
        assert.ok(existsSync(join(app, 'node_modules', '@platform', pkg, 'dist', ...path)), `${d.name} image lacks ${pkg}'s ${path.at(-1)}`);
      }
      const store = readdirSync(join(app, 'node_modules', '.pnpm'));
      for (const dev of ['typescript@', 'mocha@', 'supertest@', 'eslint@', 'openapi-typescript@']) {
        assert.ok(!store.some((p) => p.startsWith(dev)), `${d.name} image holds ${dev}`);
      }
      assert.ok(!existsSync(join(app, 'test')) && !existsSync(join(app, 'src')), `${d.name} image holds sources or tests`);
    }
  });

  it('started as their CMD with their image ENV, all three get ready and a signed login passes through the gateway', async () => {
    const ports = { gateway: await freePort(), identity: await freePort(), risk: await freePort() };
    const databases = { identity: uniqueName('image_identity'), risk: uniqueName('image_risk') };
    const url = (name: string) => Object.assign(new URL(TEST_POSTGRES_URL), { pathname: `/${name}` }).toString();
    // Only what a container would get: its image ENV, then what compose or the Deployment sets.
    const shared = {
      PATH: process.env.PATH ?? '',
      APP_ENV: 'local',
      HOST: '127.0.0.1',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `${uniqueName('image')}:`,
      IDENTITY_URL: `http://127.0.0.1:${ports.identity}`,
      RISK_URL: `http://127.0.0.1:${ports.risk}`,
      IDENTITY_JWKS_URL: `http://127.0.0.1:${ports.identity}/.well-known/jwks.json`,
      IDENTITY_DATABASE_URL: url(databases.identity),
      RISK_DATABASE_URL: url(databases.risk),
      BCRYPT_COST: '4',
      LOG_LEVEL: 'warn',
    };
    const children: StartedProcess[] = [];
    const output = () => children.map((c) => c.output()).join('');
    try {
      for (const d of DEPLOYABLES) {
        const app = apps.get(d.name)!;
        const env: Record<string, string> = {};
        for (const [name, value] of imageEnv(REPO_ROOT, d)) if ('literal' in value) env[name] = inApp(app, value.literal);
        Object.assign(env, shared, { [d.portKey]: String(ports[d.name]) }, d.name === 'gateway' ? { GATEWAY_MANAGEMENT_PORT: String(await freePort()) } : {});
        // The CMD's node flags too (--heap-growing-percent, --no-maglev): a flag this Node refused would stop it here.
        const nodeArgs = imageNodeArgs(REPO_ROOT, d.name);
        children.push(startProcess({ name: d.name, entry: 'dist/src/index.js', nodeArgs, cwd: app, env, url: `http://127.0.0.1:${ports[d.name]}`, output: 'capture' }));
      }
      const deadline = Date.now() + 60_000;
      for (const child of children) assert.ok(await untilOk(`${child.url}/health/ready`, deadline, child), `${child.url} never ready:\n${output()}`);
      const gateway = `http://127.0.0.1:${ports.gateway}`;
      // The documents the gateway image was given by IDENTITY_OPENAPI_PATH and RISK_OPENAPI_PATH.
      assert.equal((await fetch(`${gateway}/openapi.json`)).status, 200);
      const body = Buffer.from(JSON.stringify({ username: 'admin@example.com', password: 'local-admin-password' }));
      const headers = signedHeaders('POST', '/v1/auth/login', { key: { keyId: 'local-dev', alg: 'hmac-sha256', secret: 'local-dev-secret' }, body });
      const login = await fetch(`${gateway}/v1/auth/login`, { method: 'POST', headers, body });
      assert.equal(login.status, 200, await login.text());

      assert.deepEqual(await Promise.all(children.map((c) => c.stop())), [0, 0, 0], output());
    } finally {
      await Promise.all(children.map((c) => c.kill()));
      for (const name of Object.values(databases)) await dropDatabase(url(name));
    }
  });
});
