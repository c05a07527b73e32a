import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dropDatabase } from '@platform/service-kit';
import { uniqueName } from '@platform/service-kit/testing';
import { freePort, testDatabaseUrl, waitUntilOk } from './support/processes.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

describe('pnpm start (scripts/start-local.ts)', function () {
  this.timeout(60_000);

  it('brings up gateway, identity and risk with local defaults, all ready, and stops all three on Ctrl-C with exit 0', async () => {
    const ports = { GATEWAY_PORT: await freePort(), GATEWAY_MANAGEMENT_PORT: await freePort(), IDENTITY_PORT: await freePort(), RISK_PORT: await freePort() };
    const databases = { IDENTITY_DATABASE_URL: testDatabaseUrl(uniqueName('start_identity')), RISK_DATABASE_URL: testDatabaseUrl(uniqueName('start_risk')) };
    const child = spawn(process.execPath, ['scripts/start-local.ts'], {
      cwd: root,
      env: { ...process.env, APP_ENV: 'local', ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])), ...databases },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 45_000;
      for (const port of Object.values(ports)) {
        assert.ok(await waitUntilOk(`http://127.0.0.1:${port}/health/ready`, deadline), `port ${port} never ready:\n${output}`);
      }
      // The first lines say where each piece listens and what it connected to.
      assert.match(output, new RegExp(`gateway listening on http://127\\.0\\.0\\.1:${ports.GATEWAY_PORT}`));
      assert.match(output, new RegExp(`identity listening on http://127\\.0\\.0\\.1:${ports.IDENTITY_PORT}`));
      assert.match(output, new RegExp(`risk listening on http://127\\.0\\.0\\.1:${ports.RISK_PORT}`));
      assert.match(output, /"postgres":"postgres:\/\/postgres@127\.0\.0\.1:5432\/start_identity/);
      // The gateway is pointed at the pieces actually started, whatever their ports.
      assert.match(output, new RegExp(`"identity":"http://127\\.0\\.0\\.1:${ports.IDENTITY_PORT}/"`));
      assert.match(output, new RegExp(`"risk":"http://127\\.0\\.0\\.1:${ports.RISK_PORT}/"`));

      child.kill('SIGINT');
      assert.equal(await exited, 0, output);
      for (const service of ['gateway', 'identity', 'risk']) {
        assert.match(output, new RegExp(`"service":"${service}".*"exitCode":0,"msg":"stopped"`), `${service} did not stop cleanly`);
      }
      for (const port of Object.values(ports)) {
        await assert.rejects(fetch(`http://127.0.0.1:${port}/health/live`), `port ${port} still answers`);
      }
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      for (const url of Object.values(databases)) await dropDatabase(url);
    }
  });
});
