import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import { ALL_REVOCATION_BUCKETS, revocationMirrorKey } from './buckets.ts';
import type { RedisClient as Redis } from './redis-client.ts';

/** The slot of every bucket (its hash tag decides it; the environment's key prefix holds no braces). */
const BUCKET_SLOTS: readonly number[] = ALL_REVOCATION_BUCKETS.map((bucket) => calculateSlot(revocationMirrorKey(bucket)));

/** ioredis' slot map (`slots[slot] = [master, ...replicas]`, node keys `host:port`): public in its JavaScript, not in its types. */
type SlotMap = { slots: ReadonlyArray<readonly string[] | undefined> };

/** The master node key of each bucket's slot, as `cluster` routes it now. */
function bucketMasters(cluster: Cluster): Array<string | undefined> {
  const { slots } = cluster as unknown as SlotMap;
  return BUCKET_SLOTS.map((slot) => slots[slot]?.[0]);
}

/**
 * Calls `changed` with the buckets whose shard this client may have seen lose writes: a connection to it
 * lost, or its slot now served by another master (a failover, perhaps to a replica that lagged, or a
 * resharding). On one Redis that is every bucket, when the connection drops after having been ready and
 * when it is ready again. On a Redis Cluster it is the buckets of one master: when ioredis drops its node
 * (`-node`: it died, restarted or was cut off) and when a new slot map moves a bucket to another master.
 * Both are heard before any command of this client reaches the new master (a command that failed waits
 * `retryDelayOnFailover` before it is sent again), so a caller that holds the buckets at once holds them
 * in time. `stop` removes the listeners.
 */
export function onShardChange(redis: Redis, changed: (buckets: readonly number[]) => void): { stop: () => void } {
  if (!(redis instanceof Cluster)) {
    let ready = redis.status === 'ready';
    // A first connection changes nothing: nothing was read from this Redis before it.
    let readyBefore = ready;
    const lost = (): void => {
      if (!ready) return;
      ready = false;
      changed(ALL_REVOCATION_BUCKETS);
    };
    const back = (): void => {
      if (readyBefore) changed(ALL_REVOCATION_BUCKETS);
      ready = true;
      readyBefore = true;
    };
    redis.on('close', lost);
    redis.on('ready', back);
    return {
      stop: () => {
        redis.off('close', lost);
        redis.off('ready', back);
      },
    };
  }
  let masters = bucketMasters(redis);
  const bucketsOf = (node: string): number[] => ALL_REVOCATION_BUCKETS.filter((bucket) => masters[bucket] === node);
  // The cluster passes on its pool's `-node` with the node's client only; its key is ioredis' `host:port`.
  const nodeGone = (node: { options: { host?: string; port?: number } }): void => {
    const buckets = bucketsOf(`${node.options.host}:${node.options.port}`);
    if (buckets.length > 0) changed(buckets);
  };
  const refreshed = (): void => {
    const now = bucketMasters(redis);
    const moved = ALL_REVOCATION_BUCKETS.filter((bucket) => masters[bucket] !== undefined && now[bucket] !== masters[bucket]);
    masters = now;
    if (moved.length > 0) changed(moved);
  };
  redis.on('-node', nodeGone);
  redis.on('refresh', refreshed);
  return {
    stop: () => {
      redis.off('-node', nodeGone);
      redis.off('refresh', refreshed);
    },
  };
}
