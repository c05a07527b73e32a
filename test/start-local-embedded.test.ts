import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signedHeaders } from '../gateway/test/support/signing-client.ts';
import { freePort, startPnpmStart, waitUntilOk } from './support/processes.ts';

const LOCAL_KEY = { keyId: 'local-dev', alg: 'hmac-sha256', secret: 'local-dev-secret' } as const;

/** A request through the gateway, signed with the local client key (CONTRACT.md part 2). */
async function signed(gateway: string, method: string, path: string, options: { body?: unknown; bearer?: string } = {}): Promise<Response> {
  const body = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
  const headers = signedHeaders(method, path, { key: LOCAL_KEY, body, bearer: options.bearer });
  return fetch(`${gateway}${path}`, { method, headers, body });
}

describe('pnpm start with Postgres and Redis unreachable (embedded fallback)', function () {
  this.timeout(90_000);

  it('starts on PGlite and an in-process Redis shared by the three apps, says so first, and a signed login succeeds', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'embedded-stack-'));
    const ports = { GATEWAY_PORT: await freePort(), GATEWAY_MANAGEMENT_PORT: await freePort(), IDENTITY_PORT: await freePort(), RISK_PORT: await freePort() };
    const child = startPnpmStart({
      ...process.env,
      APP_ENV: 'local',
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      // Port 1: nothing listens there, so both probes fail at once.
      IDENTITY_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/identity',
      RISK_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/risk',
      REDIS_URL: 'redis://127.0.0.1:1/0',
      EMBEDDED_DATA_DIR: join(dataDir, 'pglite'),
      JWT_LOCAL_KEY_FILE: join(dataDir, 'jwt-signing-key.pem'),
      BCRYPT_COST: '4',
      LOG_LEVEL: 'warn',
    }, ports.GATEWAY_PORT);
    try {
      const deadline = Date.now() + 75_000;
      for (const port of Object.values(ports)) {
        assert.ok(await waitUntilOk(`http://127.0.0.1:${port}/health/ready`, deadline), `port ${port} never ready:\n${child.output()}`);
      }
      const firstLine = child.output().split('\n')[0] ?? '';
      assert.match(firstLine, /EMBEDDED FALLBACK/);
      assert.match(firstLine, /postgres unreachable at 127\.0\.0\.1:1, 127\.0\.0\.1:1: embedded PGlite/);
      assert.match(firstLine, /redis unreachable at 127\.0\.0\.1:1: in-process stand-in/);
      assert.match(child.output(), /"service":"embedded".*EMBEDDED FALLBACK: gateway, identity and risk run in this one process/);

      const gateway = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
      const login = await signed(gateway, 'POST', '/v1/auth/login', { body: { username: 'admin@example.com', password: 'local-admin-password' } });
      assert.equal(login.status, 200, await login.clone().text());
      const tokens = (await login.json()) as { type: string; accessToken: string };
      assert.equal(tokens.type, 'Bearer');

      // One store for all three: the risk service and the gateway see identity's logout at once.
      const cities = await signed(gateway, 'GET', '/v1/weather-stations/get-cities', { bearer: tokens.accessToken });
      assert.equal(cities.status, 200);
      assert.ok(((await cities.json()) as string[]).includes('İstanbul'));
      assert.equal((await signed(gateway, 'POST', '/v1/auth/logout', { body: { jwtToken: tokens.accessToken } })).status, 200);
      assert.equal((await signed(gateway, 'GET', '/v1/weather-stations/get-cities', { bearer: tokens.accessToken })).status, 401);

      assert.equal(await child.stop('SIGINT'), 0, child.output());
      // The embedded databases live on disk, in the folder they were given.
      assert.ok(existsSync(join(dataDir, 'pglite', 'identity', 'PG_VERSION')));
      assert.ok(existsSync(join(dataDir, 'pglite', 'risk', 'PG_VERSION')));
    } finally {
      // Stopped, not killed, when a check above failed: pnpm start stops the processes it started in their
      // own groups, which a SIGKILL of it would leave running. Killed only if it does not stop.
      await child.stop('SIGINT', 15_000);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
