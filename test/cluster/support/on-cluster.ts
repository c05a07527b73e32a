import assert from 'node:assert/strict';
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

/**
 * Counts each token holder's answer in `seen` and checks what a shard loss, failover or resharding may
 * answer it: never a 500; a revoked token 401 or 503; a live one `served` (the route's success) or 503.
 */
export function tallyHolders(holders: readonly { revoked: boolean }[], statuses: readonly number[], seen: Map<number, number>, served: number): void {
  holders.forEach((holder, i) => {
    const status = statuses[i]!;
    seen.set(status, (seen.get(status) ?? 0) + 1);
    assert.notEqual(status, 500, 'a 500 on a shard loss or cluster change');
    if (holder.revoked) assert.ok(status === 401 || status === 503, `a revoked token answered ${status}`);
    else assert.ok(status === served || status === 503, `a live token answered ${status}`);
  });
}
