import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type Redis, closeRedis, createLogger, createRedis, isCluster, redisCheck, turnWrites, waitForRedis } from '@platform/service-kit';
import { type LocalRedisCluster, startLocalRedisCluster } from '../src/index.ts';

interface Echo {
  echoKey(key: string, value: string): Promise<string>;
}

describe('createRedis on a Redis Cluster (REDIS_CLUSTER_NODES, CONTRACT.md part 14)', function () {
  this.timeout(60_000);
  let cluster: LocalRedisCluster;
  let redis: Redis;

  before(async () => {
    cluster = await startLocalRedisCluster();
    redis = createRedis({ clusterNodes: cluster.seeds.split(','), keyPrefix: 'kit-test:', logger: createLogger({ service: 'test', level: 'silent' }) });
    assert.ok(await waitForRedis(redis, 10_000), 'the cluster client never became ready');
  });

  after(async () => {
    if (redis !== undefined) await closeRedis(redis);
    await cluster?.stop();
  });

  it('is a cluster client, ready, and its readiness check passes', async () => {
    assert.ok(isCluster(redis));
    assert.equal(redis.status, 'ready');
    await redisCheck(redis).check();
  });

  it('prefixes every key, and a hash tag after the prefix still picks the slot', async () => {
    await redis.set('{tag-a}:one', '1');
    const slot = Number(await cluster.cli(cluster.nodes[0]!.port, 'CLUSTER', 'KEYSLOT', 'kit-test:{tag-a}:one'));
    const master = await cluster.masterOfSlot(slot);
    assert.equal((await cluster.cli(master, 'GET', 'kit-test:{tag-a}:one')).trim(), '1');
  });

  it('runs a script defined once (defineCommand) on whichever master holds its key', async () => {
    redis.defineCommand('echoKey', { numberOfKeys: 1, lua: "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])" });
    const commands = redis as unknown as Echo;
    const answers = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((tag) => commands.echoKey(`{${tag}}:k`, tag)));
    assert.deepEqual(answers, ['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('runs a transaction over keys of one hash tag, and Redis refuses one over two slots (CROSSSLOT)', async () => {
    const results = await redis.multi().incr('{subject}:a').incr('{subject}:b').exec();
    assert.deepEqual(results?.map(([err]) => err), [null, null]);
    await assert.rejects(redis.multi().incr('{one}:a').incr('{two}:b').exec());
  });

  it("holds every master's writes until the turn ends (turnWrites), and answers commands of every slot", async () => {
    assert.ok(isCluster(redis));
    const masters = redis.nodes('master');
    assert.equal(masters.length, 3);
    const hold = turnWrites(redis);
    hold();
    assert.deepEqual(masters.map((node) => node.stream.writableCorked), [1, 1, 1]);
    const tags = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    const answers = Promise.all(tags.map((tag) => redis.incr(`{turn-${tag}}:n`)));
    await nextTurn();
    assert.deepEqual(masters.map((node) => node.stream.writableCorked), [0, 0, 0]);
    assert.deepEqual(await answers, tags.map(() => 1));
  });
});
