import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type * as IORedis from 'ioredis';
import { closeRedis, createLogger, createRedis, isCluster, redisTopology, waitForRedis } from '@platform/service-kit';
import { type LocalRedisCluster, startLocalRedisCluster } from '@platform/stack';

const PREFIX = 'dropped:';
/** Well under ioredis' periodic slot refresh (5 s), which alone put a dropped master back before. */
const BACK_WITHIN_MS = 1000;

/** Waits until `condition` holds, or fails after `withinMs` with `what`. */
async function until(condition: () => boolean | Promise<boolean>, what: () => string, withinMs: number): Promise<number> {
  const started = Date.now();
  while (!(await condition())) {
    assert.ok(Date.now() - started < withinMs, what());
    await sleep(10);
  }
  return Date.now() - started;
}

const portsOf = (nodes: IORedis.Redis[]): number[] => nodes.map((node) => Number(node.options.port)).sort();

/**
 * A cluster client made by `createRedis` whose connections are cut by the server (CLIENT KILL, as an
 * operator or a network blip does): ioredis drops a node's connection from its pool when it ends, and put a
 * dropped master back only on a MOVED or at its periodic slot refresh (5 s). Meanwhile a replica of the
 * master's slots answered their reads itself: a revocation reader never learnt who its master was and
 * refused that bucket's tokens for the 5 s (a CI run). The client now pools a master the slot map still routes
 * to as soon as it drops, as ioredis does on a MOVED.
 */
describe('a Redis Cluster client whose connections are cut (CLIENT KILL)', function () {
  this.timeout(60_000);
  let cluster: LocalRedisCluster;
  let redis: IORedis.Cluster;
  const logger = createLogger({ service: 'dropped-connections', level: 'silent' });

  before(async () => {
    cluster = await startLocalRedisCluster();
    const client = createRedis({ clusterNodes: cluster.seeds.split(','), keyPrefix: PREFIX, logger });
    assert.ok(isCluster(client));
    redis = client;
    assert.ok(await waitForRedis(redis, 10_000), 'the cluster client was not ready within 10 s');
    // A new cluster lists its replicas once they have synced: until then the pool holds the masters only.
    await until(
      async () => {
        await new Promise<void>((resolve) => redis.refreshSlotsCache(() => resolve()));
        return redis.nodes('slave').length === 3;
      },
      () => `the client pooled ${redis.nodes('slave').length} replicas of 3`,
      15_000,
    );
  });
  after(async () => {
    if (redis !== undefined) await closeRedis(redis);
    await cluster?.stop();
  });

  const slotOf = async (key: string) => Number(await cluster.cli(cluster.nodes[0]!.port, 'CLUSTER', 'KEYSLOT', `${PREFIX}${key}`));

  /** Connects every node of the pool (a READONLY connection to each replica), then cuts the connections of those on `ports`. */
  async function cut(ports: readonly number[]): Promise<void> {
    const nodes = redis.nodes('all');
    await Promise.all(nodes.map((node) => node.ping()));
    for (const node of nodes.filter((n) => ports.includes(Number(n.options.port)))) {
      const id = String(await node.client('ID'));
      assert.equal(await cluster.cli(Number(node.options.port), 'CLIENT', 'KILL', 'ID', id), '1\n');
    }
  }

  it('each master whose connection was cut is back in the pool at once, not at the next periodic slot refresh', async () => {
    // One after another within 5 s: the periodic refresh can have put back one of them at most.
    for (const { port } of await cluster.masters()) {
      await cut([port]);
      const tookMs = await until(
        () => portsOf(redis.nodes('master')).includes(port),
        () => `the master on ${port} was not back in the pool within ${BACK_WITHIN_MS} ms (pooled masters ${portsOf(redis.nodes('master')).join(', ')})`,
        BACK_WITHIN_MS,
      );
      assert.ok(tookMs < BACK_WITHIN_MS);
    }
  });

  it("a slot whose master's connection was cut, with its replica the only node left connected, is served by its master again at once (its server known: a ticket)", async () => {
    const topology = redisTopology(redis);
    try {
      for (const { port, replicaPort } of await cluster.masters()) {
        assert.ok(replicaPort !== undefined);
        // A key of this master's slots, written before the cut: its replica holds it too.
        let key = '';
        let slot = 0;
        for (let i = 0; key === ''; i += 1) {
          slot = await slotOf(`k${i}`);
          if ((await cluster.masterOfSlot(slot)) === port) key = `k${i}`;
        }
        await redis.set(key, 'written');
        await cluster.cli(port, 'WAIT', '1', '1000');
        assert.notEqual(topology.ticket(slot), undefined);
        // Every connection but the replica's: each command of the slot goes to the replica, which answers
        // reads itself (READONLY) and so never points the client back at the master.
        await cut(portsOf(redis.nodes('all')).filter((p) => p !== replicaPort));
        const reads: string[] = [];
        await until(
          async () => {
            reads.push(String(await redis.get(key).catch((err: unknown) => String(err))));
            return topology.ticket(slot) !== undefined;
          },
          () => `the slot's master (${port}) was not known again within ${BACK_WITHIN_MS} ms; reads answered ${[...new Set(reads)].join(', ')}`,
          BACK_WITHIN_MS,
        );
        assert.equal(await redis.get(key), 'written');
      }
    } finally {
      topology.stop();
    }
  });
});
