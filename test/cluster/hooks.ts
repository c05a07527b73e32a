// Global fixtures of `pnpm test:cluster` (.mocharc.cluster.yml): one local Redis Cluster (3 masters, 3
// replicas) for the whole run, started in mocha's main process before any worker, and named to every test
// Redis by TEST_REDIS_CLUSTER_NODES (the workers inherit it), so the suites that matter on a cluster
// (CONTRACT.md part 14) run there exactly as they run on one Redis.
import { type LocalRedisCluster, startLocalRedisCluster } from '@platform/stack';

let cluster: LocalRedisCluster | undefined;

export async function mochaGlobalSetup(): Promise<void> {
  cluster = await startLocalRedisCluster();
  process.env.TEST_REDIS_CLUSTER_NODES = cluster.seeds;
}

export async function mochaGlobalTeardown(): Promise<void> {
  delete process.env.TEST_REDIS_CLUSTER_NODES;
  await cluster?.stop();
}
