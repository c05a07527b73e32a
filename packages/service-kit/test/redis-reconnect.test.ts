import assert from 'node:assert/strict';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { closeRedis, createLogger, createRedis, waitForRedis } from '../src/index.ts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0';
const logger = createLogger({ service: 'test', level: 'silent' });

describe('createRedis: connecting again', () => {
  it('a connection cut under a server that is up is made again within a few milliseconds, not after 100 ms (the moments its checks answer 503)', async () => {
    const redis = createRedis({ url: REDIS_URL, keyPrefix: 'reconnect-test:', logger });
    const admin = createRedis({ url: REDIS_URL, keyPrefix: 'reconnect-test:', logger });
    try {
      assert.ok(await waitForRedis(redis, 5000));
      assert.ok(await waitForRedis(admin, 5000));
      // The best of three cuts: a busy machine may delay one, never all three.
      const downForMs: number[] = [];
      for (let cut = 0; cut < 3; cut += 1) {
        const id = String(await redis.client('ID'));
        const closed = once(redis, 'close').then(() => performance.now());
        const ready = once(redis, 'ready').then(() => performance.now());
        await admin.client('KILL', 'ID', id);
        downForMs.push((await ready) - (await closed));
      }
      assert.ok(Math.min(...downForMs) < 90, `down for ${downForMs.map(Math.round).join(', ')} ms after each cut`);
    } finally {
      await closeRedis(admin);
      await closeRedis(redis);
    }
  });

  it('a server that cannot be reached is tried again less and less often, not every few milliseconds', async () => {
    const redis = createRedis({ url: 'redis://127.0.0.1:1/0', keyPrefix: 'reconnect-test:', logger });
    let attempts = 0;
    redis.on('reconnecting', () => (attempts += 1));
    try {
      await sleep(1000);
      // 10 ms, then 200, 300, 400 ms: 4 within the second (every 10 ms would be about 100).
      assert.ok(attempts >= 2 && attempts <= 5, `${attempts} attempts in a second`);
    } finally {
      await closeRedis(redis);
    }
  });
});
