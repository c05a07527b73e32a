import assert from 'node:assert/strict';
import { dropDatabase } from '@platform/service-kit/database';
import { uniqueName } from '@platform/service-kit/testing';
import { freePort, startPnpmStart, testDatabaseUrl, waitUntilOk } from './support/processes.ts';

describe('pnpm start (scripts/start-local.ts)', function () {
  this.timeout(60_000);

  it('brings up gateway, identity and risk with local defaults, all ready, and stops all three on Ctrl-C with exit 0', async () => {
    const ports = { GATEWAY_PORT: await freePort(), GATEWAY_MANAGEMENT_PORT: await freePort(), IDENTITY_PORT: await freePort(), RISK_PORT: await freePort() };
    const databases = { IDENTITY_DATABASE_URL: testDatabaseUrl(uniqueName('start_identity')), RISK_DATABASE_URL: testDatabaseUrl(uniqueName('start_risk')) };
    const child = startPnpmStart({ ...process.env, APP_ENV: 'local', ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])), ...databases }, ports.GATEWAY_PORT);
    try {
      const deadline = Date.now() + 45_000;
      for (const port of Object.values(ports)) {
        assert.ok(await waitUntilOk(`http://127.0.0.1:${port}/health/ready`, deadline), `port ${port} never ready:\n${child.output()}`);
      }
      // The first lines say where each piece listens and what it connected to.
      assert.match(child.output(), new RegExp(`gateway listening on http://127\\.0\\.0\\.1:${ports.GATEWAY_PORT}`));
      assert.match(child.output(), new RegExp(`identity listening on http://127\\.0\\.0\\.1:${ports.IDENTITY_PORT}`));
      assert.match(child.output(), new RegExp(`risk listening on http://127\\.0\\.0\\.1:${ports.RISK_PORT}`));
      assert.match(child.output(), /"postgres":"postgres:\/\/postgres@127\.0\.0\.1:5432\/start_identity/);
      // The gateway is pointed at the pieces actually started, whatever their ports.
      assert.match(child.output(), new RegExp(`"identity":"http://127\\.0\\.0\\.1:${ports.IDENTITY_PORT}/"`));
      assert.match(child.output(), new RegExp(`"risk":"http://127\\.0\\.0\\.1:${ports.RISK_PORT}/"`));

      assert.equal(await child.stop('SIGINT'), 0, child.output());
      for (const service of ['gateway', 'identity', 'risk']) {
        assert.match(child.output(), new RegExp(`"service":"${service}".*"exitCode":0,"msg":"stopped"`), `${service} did not stop cleanly`);
      }
      for (const port of Object.values(ports)) {
        await assert.rejects(fetch(`http://127.0.0.1:${port}/health/live`), `port ${port} still answers`);
      }
    } finally {
      // Stopped, not killed, when a check above failed: pnpm start stops the processes it started in their
      // own groups, which a SIGKILL of it would leave running. Killed only if it does not stop.
      await child.stop('SIGINT', 15_000);
      for (const url of Object.values(databases)) await dropDatabase(url);
    }
  });
});
