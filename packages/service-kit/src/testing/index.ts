import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { type Knex, type Migration, createDatabase, dropDatabase, ensureDatabaseExists, migrateToLatest } from '../database.ts';
import { type Logger, createLogger } from '../logger.ts';
import { type Redis, closeRedis, createRedis, isCluster, waitForRedis } from '../redis.ts';

/** The Postgres server tests create their databases on (trust auth on this machine and in CI). */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** The Redis tests use; every test app gets its own key prefix on it. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

/**
 * The Redis Cluster the tests use instead, when set (comma-separated host:port seeds): read when a test
 * Redis is made, so a root hook that starts a local cluster (test/cluster/hooks.ts) can set it first.
 */
export function testRedisClusterNodes(): string[] | undefined {
  const seeds = process.env.TEST_REDIS_CLUSTER_NODES?.split(',').filter((s) => s !== '');
  return seeds === undefined || seeds.length === 0 ? undefined : seeds;
}

/** A database made for one test run. */
export interface TestDatabase {
  url: string;
  db: Knex;
  /** Closes the pool and drops the database. */
  drop: () => Promise<void>;
}

/** A name no other run uses: `prefix_<time>_<random>`, lower case, a valid Postgres identifier. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/**
 * Creates a fresh database with the production migrations applied. Call `drop()` in an `after` hook:
 * every run starts from an empty schema and leaves nothing behind.
 */
export async function createTestDatabase(prefix: string, migrations: readonly Migration[]): Promise<TestDatabase> {
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${uniqueName(prefix)}`;
  const dbUrl = url.toString();
  await ensureDatabaseExists(dbUrl);
  const db = createDatabase({ url: dbUrl, applicationName: `test:${prefix}` });
  await migrateToLatest(db, migrations);
  return {
    url: dbUrl,
    db,
    drop: async () => {
      await db.destroy();
      await dropDatabase(dbUrl);
    },
  };
}

/** A logger whose lines a test can read back, to prove what is and is not logged. */
export interface CapturedLogger {
  logger: Logger;
  /** Every line logged so far, parsed. */
  lines: () => Array<Record<string, unknown>>;
  /** Every line logged so far, raw text. */
  text: () => string;
}

/** A real pino logger (same redaction as production) writing into memory. */
export function captureLogger(service: string, level = 'debug'): CapturedLogger {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      chunks.push(chunk.toString());
      callback();
    },
  });
  const logger = createLogger({ service, level, destination });
  const text = () => chunks.join('');
  return {
    logger,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/**
 * The names of the keys whose full name starts with `match`, as `redis` addresses them (without its own
 * key prefix: KEYS ignores that option, every other command adds it).
 */
async function keysUnder(redis: Redis, match: string): Promise<string[]> {
  const own = redis.options.keyPrefix ?? '';
  // A cluster's keys are spread over its masters: each is asked for its own.
  const found = isCluster(redis) ? (await Promise.all(redis.nodes('master').map((node) => node.keys(`${match}*`)))).flat() : await redis.keys(`${match}*`);
  return found.map((key) => key.slice(own.length));
}

/** Deletes every key whose full name starts with `match`: what an environment sees of a Redis that lost its data. Returns how many. */
export async function flushKeys(redis: Redis, match: string): Promise<number> {
  const names = await keysUnder(redis, match);
  if (names.length === 0) return 0;
  // One DEL per key on a cluster: a DEL of many keys spans slots.
  if (isCluster(redis)) return (await Promise.all(names.map((name) => redis.del(name)))).reduce((a, b) => a + b, 0);
  return redis.del(...names);
}

/**
 * The keys whose full name starts with `match` as they are now (value and time to live); the function
 * returned puts them back so, deleting every other key there: what the environment sees of a replica
 * that lagged behind and was promoted, or of a restart from an old snapshot.
 */
export async function snapshotKeys(redis: Redis, match: string): Promise<() => Promise<void>> {
  const saved = await Promise.all(
    (await keysUnder(redis, match)).map(async (name) => ({ name, dump: await redis.dumpBuffer(name), ttlMs: await redis.pttl(name) })),
  );
  return async () => {
    await flushKeys(redis, match);
    for (const { name, dump, ttlMs } of saved) {
      // -1: no expiry (RESTORE's 0); -2 or no dump: the key expired while the snapshot was taken.
      if (dump !== null && ttlMs !== -2) await redis.restore(name, Math.max(ttlMs, 0), dump, 'REPLACE');
    }
  };
}

/** A Redis client for one test file, on its own key prefix so parallel runs and stale keys never meet. */
export interface TestRedis {
  redis: Redis;
  keyPrefix: string;
  /** Deletes every key under the prefix: what this environment sees of a Redis that lost its data. */
  flush: () => Promise<void>;
  /** The keys under the prefix now; the function returned puts Redis back to them (`snapshotKeys`). */
  snapshot: () => Promise<() => Promise<void>>;
  /** `flush`, then closes the client (whether the flush worked or not). */
  close: () => Promise<void>;
}

/**
 * Connects to the test Redis (or the test cluster, TEST_REDIS_CLUSTER_NODES, unless a `url` is given)
 * with a unique key prefix and waits until the client is ready.
 */
export async function createTestRedis(prefix: string, url?: string): Promise<TestRedis> {
  const keyPrefix = `${uniqueName(prefix)}:`;
  const clusterNodes = url === undefined ? testRedisClusterNodes() : undefined;
  const redis = createRedis({ url: url ?? TEST_REDIS_URL, clusterNodes, keyPrefix, logger: createLogger({ service: 'test', level: 'silent' }) });
  if (!(await waitForRedis(redis, 5000))) throw new Error(`test Redis at ${clusterNodes?.join(',') ?? url ?? TEST_REDIS_URL} is not reachable`);
  const flush = async () => {
    await flushKeys(redis, keyPrefix);
  };
  return {
    redis,
    keyPrefix,
    flush,
    snapshot: () => snapshotKeys(redis, keyPrefix),
    close: async () => {
      // Closed even when the flush fails (a cluster whose master a test killed): a client left open keeps
      // its timers (a cluster's slot refresh) and with them the test process alive after the last test.
      try {
        await flush();
      } finally {
        await closeRedis(redis);
      }
    },
  };
}

/** A Redis client pointed at a port where nothing listens: how tests see a process with Redis down. */
export function unreachableRedis(): Redis {
  return createRedis({ url: 'redis://127.0.0.1:1/0', keyPrefix: 'unreachable:', logger: createLogger({ service: 'test', level: 'silent' }) });
}

/**
 * Resolves at `redis`'s next `ready` (a reconnect made), however many of its attempts fail before it: not
 * `events.once(redis, 'ready')`, which rejects at the first `error` event, and a reconnect to a server that is
 * still starting emits one per refused attempt. Rejects after `withinMs`, naming the client's status.
 */
export function nextReady(redis: Redis, withinMs = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const ready = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      redis.off('ready', ready);
      reject(new Error(`Redis was not ready again within ${withinMs} ms (status ${redis.status})`));
    }, withinMs);
    redis.once('ready', ready);
  });
}
