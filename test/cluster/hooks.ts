// Root hooks of `pnpm test:cluster` (.mocharc.cluster.yml): one local Redis Cluster (3 masters, 3 replicas)
// for the whole run, named to every test Redis by TEST_REDIS_CLUSTER_NODES before any suite starts, so the
// suites that matter on a cluster (CONTRACT.md part 14) run there exactly as they run on one Redis.
import { type LocalRedisCluster, startLocalRedisCluster } from '@platform/stack';

let cluster: LocalRedisCluster | undefined;

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(60_000);
    cluster = await startLocalRedisCluster();
    process.env.TEST_REDIS_CLUSTER_NODES = cluster.seeds;
  },
  async afterAll() {
    delete process.env.TEST_REDIS_CLUSTER_NODES;
    await cluster?.stop();
  },
};
