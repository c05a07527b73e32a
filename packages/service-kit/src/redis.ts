import { createRequire } from 'node:module';
import { hostname } from 'node:os';
import type * as IORedis from 'ioredis';
import { type ConfigField, env } from './config.ts';
import type { ReadinessCheck } from './health.ts';
import type { Logger } from './logger.ts';

/**
 * The environment's Redis: one server (`REDIS_URL`) or a Redis Cluster (`REDIS_CLUSTER_NODES`, CONTRACT.md
 * part 14). Both answer the same commands, scripts (`defineCommand`), `multi`, `status` and `ready`; on a
 * cluster every script and transaction must touch keys of one slot (one hash tag), and a pipeline keys of
 * one master: callers that span slots send one command per slot group (`Promise.all`, auto-pipelined).
 */
export type Redis = IORedis.Redis | IORedis.Cluster;

// Required, not imported: OpenTelemetry's ioredis instrumentation (tracing.ts) hooks require(), and an
// ESM import of this CommonJS package would bypass the hook, leaving Redis calls out of the traces.
const ioredis = createRequire(import.meta.url)('ioredis') as typeof IORedis;

function parseSeeds(raw: string): readonly string[] {
  const seeds = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  for (const seed of seeds) {
    const port = Number(seed.slice(seed.lastIndexOf(':') + 1));
    if (!/^[^\s:/]+:\d+$/.test(seed) || port < 1 || port > 65535) throw new Error(`must be comma-separated host:port seeds, got "${seed}"`);
  }
  if (seeds.length === 0) throw new Error('must name at least one host:port seed');
  return seeds;
}

/**
 * The Redis keys of every deployable (CONTRACT.md part 14): one Redis by `REDIS_URL`, or a Redis Cluster by
 * `REDIS_CLUSTER_NODES`, which then wins (and REDIS_URL is not required). `what` says what this deployable keeps there.
 */
export function redisConfigSpec(what: string) {
  return {
    REDIS_URL: env.url(`Redis URL (${what}); not needed with REDIS_CLUSTER_NODES`, ['redis:', 'rediss:'], {
      localDefault: 'redis://127.0.0.1:6379/0',
      secret: true,
      unlessSet: 'REDIS_CLUSTER_NODES',
    }) as ConfigField<string | undefined>,
    REDIS_CLUSTER_NODES: env.custom('Redis Cluster seeds, comma-separated host:port (any few nodes; the client finds the rest); unset: one Redis at REDIS_URL', parseSeeds, {
      default: [],
    }),
    REDIS_PASSWORD: env.string('Password of the Redis Cluster nodes (REDIS_CLUSTER_NODES); one Redis takes its password in REDIS_URL', {
      default: '',
      secret: true,
    }),
    REDIS_KEY_PREFIX: env.custom(
      'Namespace of this environment in a shared Redis; the same in every deployable (they share the token blacklist)',
      (raw) => {
        // A brace in the prefix would become every key's hash tag: the whole environment on one cluster slot.
        if (/[{}]/.test(raw)) throw new Error('must not contain { or } (they would make every key one Redis Cluster slot)');
        return raw;
      },
      { default: 'platform:' },
    ),
  };
}

/** The parsed keys of `redisConfigSpec` as `createRedis` takes them. */
export function redisConnectionOf(config: { REDIS_URL?: string | undefined; REDIS_CLUSTER_NODES: readonly string[]; REDIS_PASSWORD: string; REDIS_KEY_PREFIX: string }) {
  return {
    url: config.REDIS_URL,
    clusterNodes: config.REDIS_CLUSTER_NODES,
    password: config.REDIS_PASSWORD === '' ? undefined : config.REDIS_PASSWORD,
    keyPrefix: config.REDIS_KEY_PREFIX,
  };
}

/** What the start-up log line names as the Redis connection: the URL (its password hidden later) or the seeds. */
export function redisConnectionName(config: { REDIS_URL?: string | undefined; REDIS_CLUSTER_NODES: readonly string[] }): string {
  return config.REDIS_CLUSTER_NODES.length > 0 ? `redis-cluster://${config.REDIS_CLUSTER_NODES.join(',')}` : (config.REDIS_URL ?? '');
}

export interface RedisOptions {
  /** `redis://[:password@]host:port[/db]`: one Redis; ignored when `clusterNodes` names any. */
  url?: string | undefined;
  /** `host:port` seeds of a Redis Cluster (REDIS_CLUSTER_NODES): the client discovers the rest and follows MOVED/ASK. */
  clusterNodes?: readonly string[] | undefined;
  /** The cluster's password (REDIS_PASSWORD); a single Redis takes it in its URL. */
  password?: string | undefined;
  /** Prepended to every key, so services and environments sharing a Redis never collide. */
  keyPrefix: string;
  logger: Logger;
  /** Longest time one command may take before it fails. */
  commandTimeoutMs?: number;
  /**
   * Batch the commands of one event-loop turn (default true). An auto-pipeline waits for the one before
   * it, so against a frozen Redis a command can wait a whole timeout before its own starts: a process
   * that promises an answer within twice the timeout (the gateway's 1 s) turns it off.
   */
  autoPipelining?: boolean;
  /**
   * The deployable's name: `CLIENT LIST` shows the connections as `<name>-<pid>@<host>` (a pod's host is its
   * name), so who is connected, and which replica, is seen at a glance.
   */
  connectionName?: string;
}

/**
 * The longest time one command takes before it fails, unless `commandTimeoutMs` says otherwise: half the
 * gateway's 1 s fail-closed promise (CONTRACT.md part 3). Shorter fails healthy commands whenever the event
 * loop lags: the timer fires before the reply already waiting is read (a 300 ms timeout gave a soak on a busy
 * machine a false 503).
 */
export const REDIS_COMMAND_TIMEOUT_MS = 500;

/** How soon a client connects again after its connection was lost (the first attempt; later ones wait longer). */
const FIRST_RECONNECT_MS = 10;

/**
 * An ioredis client that fails fast rather than queueing: no offline queue, one retry per command,
 * a command timeout and a capped reconnect delay. While Redis is down, commands reject at once and
 * readiness says so; the client reconnects by itself. Connection changes are logged once each.
 */
export function createRedis(options: RedisOptions): Redis {
  const connection = {
    connectionName: options.connectionName === undefined ? undefined : `${options.connectionName}-${process.pid}@${hostname()}`,
    maxRetriesPerRequest: 1,
    commandTimeout: options.commandTimeoutMs ?? REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: 1000,
  };
  // Commands issued in one event-loop turn (the blacklist checks of concurrent requests) leave in one
  // write: a socket write costs more than the command itself (a third of a station lookup, measured).
  // On a cluster, one write per master.
  const enableAutoPipelining = options.autoPipelining ?? true;
  // The first attempt almost at once: a connection cut under a server that is up (a blip: a killed client, an
  // idle timeout, a proxy restarted) costs this process ~10 ms of 503s, not 100; a server that is down is tried
  // again 200 ms later, then 100 ms later each time, up to every 2 s.
  const reconnectDelay = (attempt: number) => (attempt === 1 ? FIRST_RECONNECT_MS : Math.min(attempt * 100, 2000));
  const redis: Redis =
    options.clusterNodes !== undefined && options.clusterNodes.length > 0
      ? new ioredis.Cluster(options.clusterNodes.map(seedOf), {
          keyPrefix: options.keyPrefix,
          enableOfflineQueue: false,
          enableAutoPipelining,
          clusterRetryStrategy: reconnectDelay,
          // A failover or a resharding is followed, not waited for: a command on a moved slot retries a few
          // times within the fail-closed budget, then fails (a 503 upstream), while the client refreshes
          // its slot map in the background. Never a command queued for seconds.
          retryDelayOnFailover: 100,
          retryDelayOnClusterDown: 100,
          retryDelayOnTryAgain: 100,
          maxRedirections: 6,
          slotsRefreshTimeout: 1000,
          slotsRefreshInterval: 5000,
          redisOptions: { ...connection, password: options.password },
        })
      : new ioredis.Redis(options.url ?? 'redis://127.0.0.1:6379/0', {
          ...connection,
          keyPrefix: options.keyPrefix,
          enableOfflineQueue: false,
          enableAutoPipelining,
          retryStrategy: reconnectDelay,
        });
  if (isCluster(redis)) {
    announceMoved(redis);
    restoreDroppedMasters(redis);
  }
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    options.logger.warn({ reason: err.message }, 'redis unreachable; reconnecting');
  });
  redis.on('ready', () => {
    if (down) options.logger.info('redis reconnected');
    down = false;
  });
  return redis;
}

/**
 * The event a cluster client made by `createRedis` emits each time it has followed a MOVED answer (the slot
 * pointed at another master before any refresh of the slot map): redis-topology.ts hears it.
 */
export const MOVED_EVENT = 'platform:moved';

/**
 * Makes `cluster` say when it followed a MOVED: ioredis emits nothing then, but right after pointing the
 * slot at the new master it asks for a slot refresh without a callback (cluster/index.js and Pipeline.js of
 * 5.11.1; a retry after a failover does too, harmlessly: listeners compare routes). Its own periodic
 * refreshes pass a callback.
 */
function announceMoved(cluster: IORedis.Cluster): void {
  const refresh = cluster.refreshSlotsCache.bind(cluster);
  cluster.refreshSlotsCache = (callback) => {
    if (callback === undefined) cluster.emit(MOVED_EVENT);
    refresh(callback);
  };
}

/** ioredis' pool of node connections: not in its types. `findOrCreate` is what it calls itself on a MOVED. */
interface NodePool {
  findOrCreate(node: { host: string; port: number }, readOnly?: boolean): IORedis.Redis;
}

/**
 * Puts a master whose connection ended back into `cluster`'s pool. ioredis drops a node's connection from its
 * pool when it ends (a CLIENT KILL, a network blip) and makes it again only on a MOVED or at the periodic slot
 * refresh (`slotsRefreshInterval`, 5 s). Meanwhile the master's slots go to any node of the pool, and a
 * replica of those slots (connected READONLY) answers their reads itself, with no MOVED: a CI run saw a
 * revocation reader refuse one bucket's tokens for 5 s after a blip (its master never asked who it is), and a
 * replica's answer may lag. So a master the slot map still routes slots to is pooled again as soon as it
 * drops, as ioredis does on a MOVED: a lazy connection, made by its next command (a master still down drops
 * again then, and its commands fail as before). Not when the pool drained: the cluster then reconnects whole.
 */
function restoreDroppedMasters(cluster: IORedis.Cluster): void {
  const pool = (cluster as unknown as { connectionPool?: Partial<NodePool> }).connectionPool;
  const findOrCreate = pool?.findOrCreate?.bind(pool);
  if (findOrCreate === undefined) throw new Error('ioredis changed: its cluster has no connectionPool.findOrCreate (restoreDroppedMasters)');
  cluster.on('-node', (node: IORedis.Redis) => {
    if (node.options.readOnly === true) return;
    const { host = '127.0.0.1', port = 6379 } = node.options;
    const key = nodeKeyOf(node);
    // After the pool's own handling of the drop (a drain, a reset that removed the node).
    setImmediate(() => {
      if (cluster.status !== 'ready' || cluster.nodes('master').some((pooled) => nodeKeyOf(pooled) === key)) return;
      if (!slotRoutes(cluster).some((route) => route?.[0] === key)) return;
      findOrCreate({ host, port }, false);
    });
  });
}

/**
 * ioredis' slot map, `routes[slot] = [master, ...replicas]` by node key (`nodeKeyOf`): public in its
 * JavaScript, not in its types. Read here and in redis-topology.ts only.
 */
export function slotRoutes(cluster: IORedis.Cluster): ReadonlyArray<readonly string[] | undefined> {
  return (cluster as unknown as { slots: ReadonlyArray<readonly string[] | undefined> }).slots;
}

/** A node connection's key as ioredis' pool and slot map name it (`host:port`). */
export const nodeKeyOf = (node: IORedis.Redis): string => `${node.options.host}:${node.options.port}`;

/** `host:port` (REDIS_CLUSTER_NODES' form) as ioredis' cluster takes it. */
function seedOf(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

/** Whether `redis` is a Redis Cluster client (its pipelines must stay on one master, its scripts on one slot). */
export function isCluster(redis: Redis): redis is IORedis.Cluster {
  return redis instanceof ioredis.Cluster;
}

/** A connection's socket as far as holding its writes goes. */
interface Corkable {
  writable: boolean;
  cork(): void;
  uncork(): void;
}

/**
 * Holds the commands written to `redis` from now until the end of this event-loop turn, and sends them in
 * one socket write then (one per master on a cluster). Call it before sending commands; a turn's later
 * calls do nothing. For a process without auto-pipelining (the gateway: an auto-pipeline waits for the one
 * before it, CONTRACT.md part 3): the commands of the requests that arrived together leave together,
 * each with its own timeout, and nothing waits for an earlier reply. A socket write costs more than the
 * command (the bench diary, `git show f0a4e11:bench/README.md`, issue 27: 60 µs of the gateway's 385 per answer were its two Redis writes).
 *
 * Only buffering is changed: commands keep their order (Redis answers them in it), a command that cannot
 * be written (Redis down, no offline queue) still fails at once, and a socket replaced by a reconnect
 * within the turn is simply not held.
 */
export function turnWrites(redis: Redis): () => void {
  let held: Corkable[] | undefined;
  const release = (): void => {
    const streams = held ?? [];
    held = undefined;
    for (const stream of streams) stream.uncork();
  };
  return () => {
    if (held !== undefined) return;
    const connections = isCluster(redis) ? redis.nodes('master') : [redis];
    held = [];
    for (const connection of connections) {
      // ioredis' documented connection socket; undefined before the first connect.
      const stream = (connection as { stream?: Corkable }).stream;
      if (stream === undefined || !stream.writable) continue;
      stream.cork();
      held.push(stream);
    }
    setImmediate(release);
  };
}

/** Closes the client politely, or at once when it is not connected. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') {
    await redis.quit().catch(() => redis.disconnect());
  } else {
    redis.disconnect();
  }
}

/** Readiness: the client is connected and Redis answers PING. */
export function redisCheck(redis: Redis): ReadinessCheck {
  return {
    name: 'redis',
    check: async () => {
      if (redis.status !== 'ready') throw new Error(`client is ${redis.status}`);
      await redis.ping();
    },
  };
}

/** Resolves when the client is ready, or after `timeoutMs` (false): start-up goes on either way. */
export function waitForRedis(redis: Redis, timeoutMs: number): Promise<boolean> {
  if (redis.status === 'ready') return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      resolve(false);
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve(true);
    };
    redis.once('ready', onReady);
  });
}
