import { type Output, type StartedProcess, startProcess, untilOk } from './process.ts';
import { freePort, freePorts } from './ports.ts';

/** The three deployables, in the order they are started. */
export const DEPLOYABLES = ['identity', 'risk', 'gateway'] as const;
export type Deployable = (typeof DEPLOYABLES)[number];

/** Where each deployable's package is, and the variable naming its port. */
export const DEPLOYABLE_PACKAGES: Readonly<Record<Deployable, { dir: string; portKey: string }>> = {
  identity: { dir: 'services/identity', portKey: 'IDENTITY_PORT' },
  risk: { dir: 'services/risk', portKey: 'RISK_PORT' },
  gateway: { dir: 'gateway', portKey: 'GATEWAY_PORT' },
};

/** The Postgres server and Redis of this machine, as `pnpm start` and the tests find them by default. */
export const LOCAL_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';
export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379/0';

/** `ts`: from the TypeScript sources, as `pnpm start` runs them; `dist`: from `pnpm build`'s output, as the images do. */
export type Sources = 'ts' | 'dist';

/** The entry file of a deployable, relative to the repository root. */
export function entryOf(name: Deployable, sources: Sources = 'ts'): string {
  const { dir } = DEPLOYABLE_PACKAGES[name];
  return sources === 'dist' ? `${dir}/dist/src/index.js` : `${dir}/src/index.ts`;
}

/** The URL of database `name` on the server of `serverUrl`. */
export function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The Redis of a stack's run: one server or a Redis Cluster (CONTRACT.md part 14), and the run's key prefix. */
export type StackRedis = { prefix: string } & ({ url: string; clusterNodes?: undefined } | { clusterNodes: string; url?: undefined });

export interface StackOptions {
  /** The environment every process starts from; the launcher adds ports, URLs, databases and the prefix. */
  env: NodeJS.ProcessEnv;
  /** What one deployable's processes get on top of `env` (a setting whose name two deployables share, say). */
  envOf?: Partial<Record<Deployable, NodeJS.ProcessEnv>>;
  sources?: Sources;
  /** Interface the processes bind (and the URLs name); 127.0.0.1 by default. */
  host?: string;
  /** Fixed ports; a free one for each deployable not named (and for the gateway's management port). */
  ports?: Partial<Record<Deployable | 'gatewayManagement', number>>;
  /**
   * Databases of this run, `<run>_identity` and `<run>_risk` on `serverUrl` (the services create and
   * migrate them in `local`), dropped by `stop`. Without it the environment's (or the defaults) are used.
   */
  databases?: { serverUrl: string; run: string };
  /**
   * A Redis key prefix of this run, whose keys `stop` deletes, on one Redis (`url`: REDIS_URL) or on a Redis
   * Cluster (`clusterNodes`, comma-separated host:port seeds: REDIS_CLUSTER_NODES). Without it the environment's.
   */
  redis?: StackRedis;
  output: Output;
  /** The three in one process on embedded stand-ins (`pnpm start`'s fallback, packages/embedded). */
  embedded?: { postgres: boolean; redis: boolean };
  /** NODE_OPTIONS of a process (an image's heap flags); the environment's when undefined. */
  nodeOptions?: (name: string) => string | undefined;
  /** Node arguments of a process (`--cpu-prof`, say). */
  nodeArgs?: (name: string) => readonly string[];
  /** See `ProcessOptions.detached`. */
  detached?: boolean;
  /** Wait until every deployable answers `/health/ready` (default), `/health/live`, or not at all. */
  readiness?: 'ready' | 'live' | 'none';
  readyTimeoutMs?: number;
}

/** One more process of a deployable beside the stack, with the stack's environment and these changes. */
export interface ExtraProcess {
  /** Names its log and messages (`risk-scaled`); the deployable's name by default. */
  as?: string;
  port?: number;
  env?: NodeJS.ProcessEnv;
  nodeOptions?: string;
}

/** The running stack. */
export interface Stack {
  urls: Readonly<Record<Deployable, string>>;
  /** The gateway's management port: its /metrics and /health/* (CONTRACT.md part 10). */
  gatewayManagementUrl: string;
  /** The environment the processes were given. */
  env: NodeJS.ProcessEnv;
  /** Every process started, in order (one when embedded). */
  processes: readonly StartedProcess[];
  /** The process serving a deployable, the newest of its name (the embedded one serves all three). */
  processOf(name: Deployable): StartedProcess;
  /** Everything the processes wrote, when captured. */
  output(): string;
  /** The deployables not answering `path` before `timeoutMs` passed (or a process ended): none when all do. */
  waitFor(path: '/health/ready' | '/health/live', timeoutMs: number): Promise<Deployable[]>;
  /** Starts one more process of `name` (waits for its readiness); `stop` stops it too. */
  start(name: Deployable, extra?: ExtraProcess): Promise<StartedProcess>;
  /** A database URL of this run on its server, dropped by `stop`. */
  database(name: string): string;
  /** Stops every process (SIGTERM by default: they drain), then drops the run's databases and deletes its Redis keys. */
  stop(signal?: NodeJS.Signals): Promise<Map<string, number | null>>;
}

/** One deployable as its own process. */
export interface DeployableOptions {
  /** Its whole environment; the port variable is set from `port`. */
  env: NodeJS.ProcessEnv;
  /** A free one when not given. */
  port?: number;
  host?: string;
  sources?: Sources;
  output: Output;
  /** Names its log and messages (`risk-scaled`); the deployable's name by default. */
  as?: string;
  nodeOptions?: string;
  nodeArgs?: readonly string[];
  detached?: boolean;
  /** What to wait for before resolving: `/health/ready` (default), `/health/live` (a fault test whose dependency is down), or nothing. */
  readiness?: 'ready' | 'live' | 'none';
  readyTimeoutMs?: number;
}

/** Starts one deployable on `port` (or a free one) and waits as `readiness` says; throws with its output when it never gets there. */
export async function startDeployable(name: Deployable, options: DeployableOptions): Promise<StartedProcess> {
  const port = options.port ?? (await freePort());
  const url = `http://${options.host ?? '127.0.0.1'}:${port}`;
  const env = { ...options.env, [DEPLOYABLE_PACKAGES[name].portKey]: String(port) };
  const started = startProcess({
    name: options.as ?? name,
    entry: entryOf(name, options.sources),
    env: options.nodeOptions === undefined ? env : { ...env, NODE_OPTIONS: options.nodeOptions },
    url,
    output: options.output,
    nodeArgs: options.nodeArgs,
    detached: options.detached,
  });
  const readiness = options.readiness ?? 'ready';
  if (readiness === 'none') return started;
  if (!(await untilOk(`${url}/health/${readiness}`, Date.now() + (options.readyTimeoutMs ?? 60_000), started))) {
    await started.kill();
    throw new Error(`${started.name} was not ${readiness} on ${url}${started.log === undefined ? `:\n${started.output()}` : `; see ${started.log}`}`);
  }
  return started;
}

/** Deletes every key below `prefix` (SCAN, never KEYS: the Redis may be shared); on a cluster, on each master. */
async function deleteKeys(where: StackRedis): Promise<void> {
  // Loaded only here: `pnpm start` runs this module before anything is built, without the development condition.
  const { closeRedis, createLogger, createRedis, isCluster, waitForRedis } = await import('@platform/service-kit');
  const clusterNodes = where.clusterNodes?.split(',').filter((seed) => seed !== '');
  const redis = createRedis({ url: where.url, clusterNodes, keyPrefix: '', logger: createLogger({ service: 'stack', level: 'silent' }), commandTimeoutMs: 10_000 });
  try {
    if (!(await waitForRedis(redis, 2000))) return;
    for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${where.prefix}*`, 'COUNT', 1000);
        // One UNLINK per key on a cluster: the keys of one master still span slots.
        if (keys.length > 0) await Promise.all(isCluster(redis) ? keys.map((key) => node.unlink(key)) : [node.unlink(...keys)]);
        cursor = next;
      } while (cursor !== '0');
    }
  } finally {
    await closeRedis(redis);
  }
}

async function dropDatabases(urls: readonly string[]): Promise<void> {
  if (urls.length === 0) return;
  const { dropDatabase } = await import('@platform/service-kit/database');
  for (const url of urls) await dropDatabase(url).catch(() => undefined);
}

/**
 * Starts identity, risk and gateway as `pnpm start` does (each process reads its own configuration;
 * APP_ENV=local creates, migrates and seeds the databases), on the given or free ports, wired to one
 * another: the gateway and risk find identity and risk where they were started, unless the environment
 * names them. What `pnpm start`, `pnpm soak`, `pnpm bench` and the end-to-end and fault tests all use.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const host = options.host ?? '127.0.0.1';
  const sources = options.sources ?? 'ts';
  // Four distinct ports, whichever are not given, from one freePorts call.
  const spare = await freePorts(4);
  const ports: Record<Deployable, number> = {
    identity: options.ports?.identity ?? (spare[0] as number),
    risk: options.ports?.risk ?? (spare[1] as number),
    gateway: options.ports?.gateway ?? (spare[2] as number),
  };
  const urls: Record<Deployable, string> = {
    identity: `http://${host}:${ports.identity}`,
    risk: `http://${host}:${ports.risk}`,
    gateway: `http://${host}:${ports.gateway}`,
  };
  // Never the default 9080 unless asked for: several stacks (and gateways beside them) may run at once.
  const managementPort = options.ports?.gatewayManagement ?? (spare[3] as number);
  const databases: string[] = [];
  const database = (name: string) => {
    if (options.databases === undefined) throw new Error('this stack has no database server of its own');
    const url = databaseUrl(options.databases.serverUrl, `${options.databases.run}_${name}`);
    databases.push(url);
    return url;
  };
  const env: NodeJS.ProcessEnv = { ...options.env, HOST: options.env.HOST ?? host };
  for (const name of DEPLOYABLES) env[DEPLOYABLE_PACKAGES[name].portKey] = String(ports[name]);
  env.GATEWAY_MANAGEMENT_PORT = String(managementPort);
  env.IDENTITY_URL ??= urls.identity;
  env.RISK_URL ??= urls.risk;
  env.IDENTITY_JWKS_URL ??= `${urls.identity}/.well-known/jwks.json`;
  // The gateway's origin as its clients reach it: every token's `iss` and the discovery's `issuer` (CONTRACT.md part 16).
  env.TOKEN_ISSUER ??= `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${ports.gateway}`;
  if (options.databases !== undefined) {
    env.IDENTITY_DATABASE_URL = database('identity');
    env.RISK_DATABASE_URL = database('risk');
  }
  if (options.redis !== undefined) {
    // The one named, never the environment's other kind: REDIS_CLUSTER_NODES wins over REDIS_URL.
    if (options.redis.clusterNodes !== undefined) {
      env.REDIS_CLUSTER_NODES = options.redis.clusterNodes;
      delete env.REDIS_URL;
    } else {
      env.REDIS_URL = options.redis.url;
      delete env.REDIS_CLUSTER_NODES;
    }
    env.REDIS_KEY_PREFIX = options.redis.prefix;
  }

  const processes: StartedProcess[] = [];
  const common = { host, sources, output: options.output, detached: options.detached };
  const launch = async (name: Deployable, extra: ExtraProcess, readiness: 'ready' | 'none') => {
    const as = extra.as ?? name;
    const started = await startDeployable(name, {
      ...common,
      env: { ...env, ...options.envOf?.[name], ...extra.env },
      port: extra.port,
      as,
      nodeOptions: extra.nodeOptions ?? options.nodeOptions?.(as),
      nodeArgs: options.nodeArgs?.(as),
      readiness,
      readyTimeoutMs: options.readyTimeoutMs,
    });
    processes.push(started);
    return started;
  };
  if (options.embedded !== undefined) {
    const flags = [...(options.embedded.postgres ? ['--postgres'] : []), ...(options.embedded.redis ? ['--redis'] : [])];
    // Tracing off (OpenTelemetry's own switch, set in the environment the process is given): the three
    // deployables share the one process, where one tracer would name every span after whichever started first.
    const embeddedEnv = { ...env, OTEL_SDK_DISABLED: 'true' };
    processes.push(startProcess({ name: 'embedded stack', entry: 'packages/embedded/src/main.ts', args: flags, env: embeddedEnv, url: urls.gateway, output: options.output, detached: options.detached }));
  } else {
    for (const name of DEPLOYABLES) await launch(name, { port: ports[name] }, 'none');
  }
  // The newest: a process restarted under its own name (`start(name, { port })` after stopping it) serves now.
  const processOf = (name: Deployable) => processes.findLast((p) => p.name === name) ?? (processes[0] as StartedProcess);

  const waitFor: Stack['waitFor'] = async (path, timeoutMs) => {
    const deadline = Date.now() + timeoutMs;
    const answers = await Promise.all(DEPLOYABLES.map(async (name) => [name, await untilOk(`${urls[name]}${path}`, deadline, processOf(name))] as const));
    return answers.filter(([, ok]) => !ok).map(([name]) => name);
  };

  const stop: Stack['stop'] = async (signal) => {
    // All at once: each drains its own requests, and none waits on another to stop.
    const codes = new Map(await Promise.all(processes.map(async (started) => [started.name, await started.stop(signal)] as const)));
    await dropDatabases(databases);
    if (options.redis !== undefined) await deleteKeys(options.redis);
    return codes;
  };

  const stack: Stack = {
    urls,
    gatewayManagementUrl: `http://${host}:${managementPort}`,
    env,
    processes,
    processOf,
    output: () => processes.map((p) => p.output()).join(''),
    waitFor,
    start: (name, extra = {}) => launch(name, extra, 'ready'),
    database,
    stop,
  };

  const readiness = options.readiness ?? 'ready';
  if (readiness !== 'none') {
    const late = await stack.waitFor(readiness === 'ready' ? '/health/ready' : '/health/live', options.readyTimeoutMs ?? 60_000);
    if (late.length > 0) {
      await stop();
      const logs = processes.flatMap((p) => (p.log === undefined ? [] : [p.log]));
      throw new Error(`not ${readiness} in time: ${late.join(', ')}${logs.length > 0 ? `; see ${logs.join(', ')}` : `\n${stack.output()}`}`);
    }
  }
  return stack;
}
