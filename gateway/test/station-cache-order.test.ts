import assert from 'node:assert/strict';
import { closeRedis, createLogger, createMetrics, createRedis, publishStationGeneration } from '@platform/service-kit';
import { TEST_REDIS_URL, type TestRedis, createTestRedis } from '@platform/service-kit/testing';
import { POLL_MS, type StationCache, createStationCache } from '../src/cache/station-cache.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Every entry's bytes: its 100-byte body, its key of 3 characters and the estimate of its overhead (512). */
const ENTRY_BYTES = 100 + 3 + 512;

/** The cache's eviction order, read through its own operations on a real Redis generation. */
describe('station cache: least recently used out first, within GATEWAY_CACHE_MB (CONTRACT.md part 17)', () => {
  let testRedis: TestRedis;
  let cache: StationCache;

  const answer = (generation: number) => ({ status: 200 as const, headers: { 'content-type': 'application/json' }, body: Buffer.alloc(100, 'x'), error: undefined, etag: '"e"', generation, freshForMs: 60_000 });
  const keyOf = (i: number) => `k${String(i).padStart(2, '0')}`;

  beforeEach(async () => {
    testRedis = await createTestRedis('gw-station-cache-order');
    await publishStationGeneration(testRedis.redis, 1);
    // Room for 16 entries exactly (one entry may take at most a 16th).
    cache = createStationCache({ maxBytes: 16 * ENTRY_BYTES, redis: testRedis.redis, metrics: createMetrics('gateway', { collectDefault: false }), logger: createLogger({ service: 'gateway', level: 'silent' }) });
    cache.start();
    const deadline = Date.now() + 3000;
    while (!cache.usable() && Date.now() < deadline) await sleep(20);
    assert.ok(cache.usable(), 'the generation was never read');
  });
  afterEach(async () => {
    await cache.stop();
    await testRedis.close();
  });

  it('evicts the entry used longest ago: a hit makes an entry the newest, a store of its key again too', () => {
    for (let i = 0; i < 16; i += 1) cache.put(keyOf(i), answer(1));
    assert.equal(cache.bytes(), 16 * ENTRY_BYTES);
    // k00 used (the newest now), k01 stored again (newer still): k02 and k03 are the oldest.
    assert.ok(cache.get(keyOf(0)));
    cache.put(keyOf(1), answer(1));
    cache.put(keyOf(16), answer(1));
    cache.put(keyOf(17), answer(1));
    assert.equal(cache.bytes(), 16 * ENTRY_BYTES);
    assert.equal(cache.get(keyOf(2)), undefined);
    assert.equal(cache.get(keyOf(3)), undefined);
    for (const i of [0, 1, 4, 15, 16, 17]) assert.ok(cache.get(keyOf(i)), `${keyOf(i)} was evicted`);
    // The newest used again changes nothing; the oldest is still k05.
    assert.ok(cache.get(keyOf(17)));
    assert.ok(cache.get(keyOf(17)));
    cache.put(keyOf(18), answer(1));
    assert.equal(cache.get(keyOf(5)), undefined);
    assert.ok(cache.get(keyOf(6)));
  });

  it('drops every entry when the generation changes, and counts their bytes out', async () => {
    for (let i = 0; i < 5; i += 1) cache.put(keyOf(i), answer(1));
    assert.ok(cache.get(keyOf(2)));
    assert.equal(cache.bytes(), 5 * ENTRY_BYTES);
    await publishStationGeneration(testRedis.redis, 2);
    const deadline = Date.now() + 3000;
    while (cache.bytes() !== 0 && Date.now() < deadline) await sleep(20);
    assert.equal(cache.bytes(), 0);
    for (let i = 0; i < 5; i += 1) assert.equal(cache.get(keyOf(i)), undefined);
    // The new generation's answers are stored and evicted as before.
    for (let i = 0; i < 17; i += 1) cache.put(keyOf(i), answer(2));
    assert.equal(cache.get(keyOf(0)), undefined);
    assert.ok(cache.get(keyOf(1)));
    assert.equal(cache.bytes(), 16 * ENTRY_BYTES);
  });
});

describe('station cache: what it logs of the generation it cannot read', () => {
  it('says nothing above debug while the process starts (its first poll runs before Redis is connected); warns once when it cannot read after having read, and says when it can again', async () => {
    const testRedis = await createTestRedis('gw-station-cache-log');
    const lines: Array<{ level: string; msg: string; reason?: string; err?: unknown }> = [];
    const logger = createLogger({ service: 'gateway', level: 'debug', destination: { write: (line: string) => void lines.push(JSON.parse(line) as { level: string; msg: string }) } });
    const said = (level: string) => lines.filter((l) => l.level === level && l.msg.startsWith('station cache')).map((l) => l.msg);
    // As the gateway's start makes it: a client not connected yet, and the cache started at once.
    const redis = createRedis({ url: TEST_REDIS_URL, keyPrefix: testRedis.keyPrefix, logger: createLogger({ service: 'test', level: 'silent' }) });
    const cache = createStationCache({ maxBytes: 16 * ENTRY_BYTES, redis, metrics: createMetrics('gateway', { collectDefault: false }), logger });
    try {
      await publishStationGeneration(testRedis.redis, 1);
      cache.start();
      const until = async (done: () => boolean, what: string) => {
        const deadline = Date.now() + 5000;
        while (!done() && Date.now() < deadline) await sleep(20);
        assert.ok(done(), what);
      };
      await until(() => cache.usable(), 'the generation was never read');
      assert.deepEqual(said('debug'), ['station cache: the station generation cannot be read yet'], 'the first poll did not meet a client still connecting');
      assert.deepEqual([...said('info'), ...said('warn')], []);
      // Read once, then lost: a warning, once however many polls fail, and a line when it reads again.
      redis.disconnect();
      await until(() => said('warn').length > 0 && !cache.usable(), 'no warning when the generation could no longer be read');
      await sleep(3 * POLL_MS);
      assert.deepEqual(said('warn'), ['station cache: cannot read the station generation; answers go upstream until it can']);
      // Redis's reason, not the client's stack.
      const warning = lines.find((l) => l.level === 'warn' && l.msg.startsWith('station cache'));
      assert.match(String(warning?.reason), /Stream isn't writeable|Connection is closed/);
      assert.equal(warning?.err, undefined);
      await redis.connect();
      await until(() => said('info').length > 0 && cache.usable(), 'not read again after the reconnect');
      assert.deepEqual(said('info'), ['station cache: the generation can be read again']);
    } finally {
      await cache.stop();
      await closeRedis(redis);
      await testRedis.close();
    }
  });
});
