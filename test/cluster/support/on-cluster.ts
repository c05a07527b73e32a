import type { LocalRedisCluster } from '@platform/stack';

/**
 * Runs `start` with TEST_REDIS_CLUSTER_NODES naming `cluster`, so that the test Redis of whatever it
 * starts (an identity harness, a whole stack) is that cluster; the variable is as it was afterwards.
 */
export async function startedOn<T>(cluster: LocalRedisCluster, start: () => Promise<T>): Promise<T> {
  const before = process.env.TEST_REDIS_CLUSTER_NODES;
  process.env.TEST_REDIS_CLUSTER_NODES = cluster.seeds;
  try {
    return await start();
  } finally {
    if (before === undefined) delete process.env.TEST_REDIS_CLUSTER_NODES;
    else process.env.TEST_REDIS_CLUSTER_NODES = before;
  }
}
