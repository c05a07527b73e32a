import { join } from 'node:path';
import { createLogger, createRedis, closeRedis, dropDatabase } from '@platform/service-kit';
import { type DeployableName, deployable, imageEnv } from '../test/deploy-support/deployables.ts';
import { type BenchConfig, ROOT } from './config.ts';
import { type Started, freePort, startNode, waitUntilOk } from './processes.ts';
import { type RequestShape, createSigner } from './signer.ts';

/** The three processes the scenarios talk to, and what a run leaves behind to clean up. */
export interface Stack {
  gatewayUrl: string;
  identityUrl: string;
  riskUrl: string;
  riskPid: number | undefined;
  gatewayPid: number | undefined;
  identityPid: number | undefined;
  /** The Redis key prefix of this run's processes (every key is deleted at the end). */
  redisPrefix: string | undefined;
  /** A fresh database URL on the benchmark's Postgres, named for this run and dropped at the end. */
  database(name: string): string;
  /** Starts one more process of the run (stopped by `close`). */
  start(options: StartOptions): Promise<Started>;
  /** Stops what was started, drops the run's databases and deletes its Redis keys. */
  close(): Promise<void>;
}

/** One process to start: its entry file, environment and the port it will listen on. */
export interface StartOptions {
  name: string;
  entry: string;
  env: NodeJS.ProcessEnv;
  port: number;
  /** NODE_OPTIONS when not the image's (BENCH_NODE_OPTIONS still wins). */
  nodeOptions?: string;
}

const DIRS = { identity: 'services/identity', risk: 'services/risk', gateway: 'gateway' } as const;

/**
 * The NODE_OPTIONS a deployable's image sets (deploy/<name>/Dockerfile, read as the deployment checks
 * read it), so the benchmark measures the services as they are deployed; empty when the image sets none.
 */
export function imageNodeOptions(name: DeployableName): string {
  const value = imageEnv(ROOT, deployable(name)).get('NODE_OPTIONS');
  return value !== undefined && 'literal' in value ? value.literal : '';
}

/** The deployable a started process is an instance of (`risk-scaled` is a risk). */
function deployableOf(processName: string): keyof typeof DIRS {
  const name = Object.keys(DIRS).find((d) => processName === d || processName.startsWith(`${d}-`));
  if (name === undefined) throw new Error(`no deployable named like ${processName}`);
  return name as keyof typeof DIRS;
}

/** The entry file of a deployable: its build output (as in production) or its TypeScript source. */
export function entryOf(name: keyof typeof DIRS, config: BenchConfig): string {
  return config.sources === 'dist' ? `${DIRS[name]}/dist/src/index.js` : `${DIRS[name]}/src/index.ts`;
}

/** Deletes every key below `prefix` (SCAN, never KEYS: the Redis may be shared). */
async function deleteKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = createRedis({ url: redisUrl, keyPrefix: '', logger: createLogger({ service: 'bench', level: 'silent' }), commandTimeoutMs: 10_000 });
  try {
    await new Promise<void>((resolve, reject) => {
      redis.once('ready', resolve);
      redis.once('error', reject);
    });
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await closeRedis(redis);
  }
}

/**
 * Starts identity, risk and gateway like scripts/start-local.ts (APP_ENV=local), on free ports, with
 * this run's own databases, Redis prefix and signing key file, or adopts the running stack the
 * configuration names. Either way the other scenarios need not know which.
 */
export async function startStack(config: BenchConfig, runId: string, logDir: string): Promise<Stack> {
  const started: Started[] = [];
  const databases: string[] = [];
  const database = (name: string) => {
    const url = new URL(config.postgresUrl);
    url.pathname = `/${runId}_${name}`;
    databases.push(url.toString());
    return url.toString();
  };
  const start = async (options: StartOptions) => {
    // A profile is written when the process exits, so it covers the whole run.
    const profile = config.cpuProf.has(options.name) ? ['--cpu-prof', `--cpu-prof-dir=${logDir}`, `--cpu-prof-name=${options.name}.cpuprofile`] : [];
    const nodeArgs = [...config.nodeArgs, ...profile];
    const nodeOptions = config.nodeOptions ?? options.nodeOptions ?? imageNodeOptions(deployableOf(options.name));
    const env = { ...options.env, NODE_OPTIONS: nodeOptions };
    const piece = startNode({ ...options, env, logDir, nodeArgs });
    started.push(piece);
    await waitUntilOk(`${piece.url}/health/ready`, piece);
    return piece;
  };
  // A stack of our own gets its own Redis namespace, which is emptied at the end.
  const redisPrefix = config.external === undefined ? `${runId}:` : undefined;
  const close = async () => {
    for (const piece of started.reverse()) await piece.stop();
    for (const url of databases) await dropDatabase(url).catch(() => undefined);
    if (redisPrefix !== undefined) await deleteKeys(config.redisUrl, redisPrefix);
  };

  if (config.external !== undefined) {
    const { external } = config;
    return { ...external, identityPid: undefined, redisPrefix: undefined, database, start, close };
  }

  const ports = { identity: await freePort(), risk: await freePort(), gateway: await freePort() };
  const identityUrl = `http://127.0.0.1:${ports.identity}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    APP_ENV: 'local',
    HOST: '127.0.0.1',
    REDIS_URL: config.redisUrl,
    REDIS_KEY_PREFIX: redisPrefix,
    IDENTITY_PORT: String(ports.identity),
    RISK_PORT: String(ports.risk),
    GATEWAY_PORT: String(ports.gateway),
    GATEWAY_MANAGEMENT_PORT: String(await freePort()),
    IDENTITY_URL: identityUrl,
    RISK_URL: `http://127.0.0.1:${ports.risk}`,
    IDENTITY_JWKS_URL: `${identityUrl}/.well-known/jwks.json`,
    IDENTITY_DATABASE_URL: database('identity'),
    RISK_DATABASE_URL: database('risk'),
    JWT_LOCAL_KEY_FILE: join(logDir, 'jwt-signing-key.pem'),
    BCRYPT_COST: String(config.bcryptCost),
    // One token serves the whole run.
    ACCESS_TOKEN_TTL_S: '3600',
  };
  try {
    // Identity first: the others fetch its JWKS.
    const identity = await start({ name: 'identity', entry: entryOf('identity', config), env, port: ports.identity });
    const [risk, gateway] = await Promise.all([
      start({ name: 'risk', entry: entryOf('risk', config), env, port: ports.risk }),
      start({ name: 'gateway', entry: entryOf('gateway', config), env, port: ports.gateway }),
    ]);
    return {
      gatewayUrl: gateway.url,
      identityUrl,
      riskUrl: risk.url,
      riskPid: risk.pid,
      gatewayPid: gateway.pid,
      identityPid: identity.pid,
      redisPrefix,
      database,
      start,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The environment of one more risk process beside the stack's (the scale scenario's large station set). */
export function riskEnv(stack: Stack, config: BenchConfig, port: number, databaseUrl: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    APP_ENV: 'local',
    HOST: '127.0.0.1',
    RISK_PORT: String(port),
    RISK_DATABASE_URL: databaseUrl,
    REDIS_URL: config.redisUrl,
    REDIS_KEY_PREFIX: stack.redisPrefix ?? 'platform:',
    IDENTITY_JWKS_URL: `${stack.identityUrl}/.well-known/jwks.json`,
    // The synthetic rows are inserted after the start's seed; the copy must be picked up quickly.
    RISK_INDEX_POLL_MS: '200',
  };
}

/** A logged-in ADMIN: the bearer token and user id every authenticated scenario uses. */
export interface Session {
  token: string;
  userId: string;
}

/** One signed request through the gateway, for set-up (not measured). */
export async function signedCall(config: BenchConfig, gatewayUrl: string, shape: RequestShape): Promise<{ status: number; body: unknown; headers: Headers }> {
  const headers = createSigner({ keyId: config.keyId, secret: config.keySecret }).for(shape)();
  const response = await fetch(new URL(shape.target, gatewayUrl), { method: shape.method, headers, body: shape.body });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : (JSON.parse(text) as unknown), headers: response.headers };
}

/** Logs in as the bootstrap ADMIN through the gateway and makes sure the ADMIN has an account to read. */
export async function adminSession(config: BenchConfig, stack: Stack): Promise<Session> {
  const login = await signedCall(config, stack.gatewayUrl, {
    method: 'POST',
    target: '/v1/auth/login',
    body: JSON.stringify({ username: config.adminUsername, password: config.adminPassword }),
  });
  const token = (login.body as { accessToken?: unknown } | undefined)?.accessToken;
  if (login.status !== 200 || typeof token !== 'string') throw new Error(`login as ${config.adminUsername} answered ${login.status}`);
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub: string };
  const account = await signedCall(config, stack.gatewayUrl, {
    method: 'POST',
    target: '/v1/accounts/create',
    body: JSON.stringify({ userId: payload.sub, type: 'INDIVIDUAL' }),
    bearer: token,
  });
  // 409: a running stack's ADMIN may have one already.
  if (account.status !== 201 && account.status !== 409) throw new Error(`account create answered ${account.status}`);
  return { token, userId: payload.sub };
}
