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
 * Where `redis` sends bucket's commands now: on a cluster the master node key of its slot, as ioredis
 * routes it (a MOVED answer changes it at once, before any slot refresh); on one Redis always ''.
 */
export function bucketRoute(redis: Redis, bucket: number): string {
  if (!(redis instanceof Cluster)) return '';
  return (redis as unknown as SlotMap).slots[BUCKET_SLOTS[bucket] ?? -1]?.[0] ?? '';
}

/** Who hears each cluster client's MOVED answers (`onMoved`). */
const movedListeners = new WeakMap<Cluster, Set<() => void>>();

/**
 * Calls `listener` each time `cluster` has followed a MOVED: ioredis emits nothing then, but right after
 * pointing the slot at the new master it asks for a slot refresh without a callback (cluster/index.js and
 * Pipeline.js of 5.11.1; a retry after a failover does too, harmlessly: the listener compares routes).
 * The client's method is wrapped once. Returns the function that removes the listener.
 */
function onMoved(cluster: Cluster, listener: () => void): () => void {
  let listeners = movedListeners.get(cluster);
  if (listeners === undefined) {
    const heard = new Set<() => void>();
    const refresh = cluster.refreshSlotsCache.bind(cluster);
    cluster.refreshSlotsCache = (callback) => {
      if (callback === undefined) for (const each of heard) each();
      refresh(callback);
    };
    listeners = heard;
    movedListeners.set(cluster, heard);
  }
  listeners.add(listener);
  const added = listeners;
  return () => void added.delete(listener);
}

/** A watch on the shards of a client's buckets (`onShardChange`). */
export interface ShardWatch {
  /**
   * Whether the client routes `bucket` to another master than its last slot map said (ioredis followed a
   * MOVED; the refresh it starts tells whether the bucket really moved).
   */
  routeMoved(bucket: number): boolean;
  stop(): void;
}

/**
 * Calls `changed` with the buckets whose shard this client may have seen lose writes: a connection to it
 * lost, or its slot now served by another master (a failover, perhaps to a replica that lagged, or a
 * resharding). On one Redis that is every bucket, when the connection drops after having been ready and
 * when it is ready again. On a Redis Cluster it is the buckets of one master: when ioredis drops its node
 * (`-node`: it died, restarted or was cut off), when it connects to that node again (`+node`), and when a
 * new slot map moves a bucket to another master; and every bucket when the whole client is ready again.
 * Neither is always heard before a command reaches the new master: a command under way when the
 * connection dropped is sent again (to the new master, after a refresh, or at once after a MOVED), and a
 * MOVED moves the route before any refresh. So a caller also asks `routeMoved` before a command and
 * compares what it asked with what holds after the answer (mirror.ts, `revocationTicket`); `moved` hears
 * the buckets a MOVED pointed elsewhere, at once. `stop` removes the listeners.
 */
export function onShardChange(redis: Redis, changed: (buckets: readonly number[]) => void, moved?: (buckets: readonly number[]) => void): ShardWatch {
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
      // Only a `ready` after a `close` (the in-process stand-in says `ready` once more after it was).
      if (readyBefore && !ready) changed(ALL_REVOCATION_BUCKETS);
      ready = true;
      readyBefore = true;
    };
    redis.on('close', lost);
    redis.on('ready', back);
    return {
      routeMoved: () => false,
      stop: () => {
        redis.off('close', lost);
        redis.off('ready', back);
      },
    };
  }
  let masters = bucketMasters(redis);
  const bucketsOf = (node: string): number[] => ALL_REVOCATION_BUCKETS.filter((bucket) => masters[bucket] === node);
  // The cluster passes on its pool's `-node` and `+node` with the node's client only; its key is ioredis' `host:port`.
  const keyOf = (node: { options: { host?: string; port?: number } }): string => `${node.options.host}:${node.options.port}`;
  // Nodes dropped since: one connected again is told too (what was read there before may be gone).
  const gone = new Set<string>();
  const tell = (buckets: readonly number[]): void => {
    if (buckets.length > 0) changed(buckets);
  };
  const nodeGone = (node: { options: { host?: string; port?: number } }): void => {
    gone.add(keyOf(node));
    tell(bucketsOf(keyOf(node)));
  };
  const nodeBack = (node: { options: { host?: string; port?: number } }): void => {
    if (gone.delete(keyOf(node))) tell(bucketsOf(keyOf(node)));
  };
  // Only says so: the refresh every MOVED starts tells the change, if there is one. (ioredis' MOVED
  // changes the route of a whole range of slots that share one array, not only the slot that moved.)
  const routeMoved = (bucket: number): boolean => {
    const seen = masters[bucket];
    const now = bucketRoute(redis, bucket);
    return seen !== undefined && now !== '' && now !== seen;
  };
  // The whole client connected again (every node dropped, as by disconnect and reconnect): every bucket.
  let whole = redis.status === 'ready';
  let readyBefore = whole;
  const closed = (): void => {
    whole = false;
  };
  const ready = (): void => {
    if (readyBefore && !whole) changed(ALL_REVOCATION_BUCKETS);
    whole = true;
    readyBefore = true;
  };
  // A MOVED points a slot at another master before any refresh, and a refresh under way from before it
  // may point it back: the buckets whose route moved are told to `moved` at once, so that no answer from
  // the new master passes for one from the old (their tickets change). No close: the refresh the MOVED
  // starts says whether the bucket really moved.
  const movedOff = onMoved(redis, () => {
    const flipped = ALL_REVOCATION_BUCKETS.filter(routeMoved);
    if (flipped.length > 0) moved?.(flipped);
  });
  const refreshed = (): void => {
    const now = bucketMasters(redis);
    const elsewhere = ALL_REVOCATION_BUCKETS.filter((bucket) => masters[bucket] !== undefined && now[bucket] !== masters[bucket]);
    masters = now;
    tell(elsewhere);
  };
  redis.on('-node', nodeGone);
  redis.on('+node', nodeBack);
  redis.on('refresh', refreshed);
  redis.on('ready', ready);
  redis.on('close', closed);
  return {
    routeMoved,
    stop: () => {
      redis.off('-node', nodeGone);
      redis.off('+node', nodeBack);
      redis.off('refresh', refreshed);
      redis.off('ready', ready);
      redis.off('close', closed);
      movedOff();
    },
  };
}
