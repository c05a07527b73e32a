import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { closeRedis, createLogger, createRedis, waitForRedis } from '@platform/service-kit';
import { createDatabase } from '@platform/service-kit/database';
import { TEST_POSTGRES_URL, TEST_REDIS_URL } from '@platform/service-kit/testing';
import { startStack } from '../src/index.ts';

async function databaseExists(name: string): Promise<boolean> {
  const db = createDatabase({ url: TEST_POSTGRES_URL, applicationName: 'stack-test' });
  try {
    const { rows } = await db.raw<{ rows: unknown[] }>('SELECT 1 FROM pg_database WHERE datname = ?', [name]);
    return rows.length > 0;
  } finally {
    await db.destroy();
  }
}

describe('startStack (@platform/stack)', function () {
  this.timeout(90_000);

  it('starts the three wired to one another on free ports, and stop ends them, drops the run databases and deletes the run keys', async () => {
    const run = `stack_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
    const stack = await startStack({
      env: { PATH: process.env.PATH, APP_ENV: 'local', LOG_LEVEL: 'warn', BCRYPT_COST: '4' },
      databases: { serverUrl: TEST_POSTGRES_URL, run },
      redis: { url: TEST_REDIS_URL, prefix: `${run}:` },
      output: 'capture',
    });
    const redis = createRedis({ url: TEST_REDIS_URL, keyPrefix: `${run}:`, logger: createLogger({ service: 'test', level: 'silent' }) });
    try {
      for (const url of Object.values(stack.urls)) assert.equal((await fetch(`${url}/health/ready`)).status, 200, stack.output());
      assert.equal(stack.env.IDENTITY_JWKS_URL, `${stack.urls.identity}/.well-known/jwks.json`);
      assert.ok(await databaseExists(`${run}_identity`));
      assert.ok(await waitForRedis(redis, 2000));
      await redis.set('left-behind', '1');

      const codes = await stack.stop();
      assert.deepEqual([...codes.values()], [0, 0, 0], stack.output());
      for (const url of Object.values(stack.urls)) await assert.rejects(fetch(`${url}/health/live`), `${url} still answers`);
      assert.equal(await databaseExists(`${run}_identity`), false);
      assert.equal(await databaseExists(`${run}_risk`), false);
      assert.equal(await redis.exists('left-behind'), 0);
    } finally {
      await closeRedis(redis);
      await stack.stop();
    }
  });
});
