import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  type Deployable,
  type ExtraProcess,
  type StartedProcess,
  imageAllocatorEnv as imageAllocatorEnvIn,
  imageNodeArgs as imageNodeArgsIn,
  imageNodeOptions as imageNodeOptionsIn,
  startStack as launch,
} from '@platform/stack';
import { type BenchConfig, ROOT } from './config.ts';
import { type RequestShape, signOnce } from './signer.ts';
import { RATE } from '../limits/common.ts';

/** The three processes the scenarios talk to, and what a run leaves behind to clean up. */
export interface Stack {
  gatewayUrl: string;
  identityUrl: string;
  riskUrl: string;
  riskPid: number | undefined;
  gatewayPid: number | undefined;
  identityPid: number | undefined;
  /** INTERNAL_ASSERTION_KEY of a stack the benchmark started (to vouch for requests as the gateway does); undefined for a running one. */
  assertionKey: string | undefined;
  /** REDIS_KEY_PREFIX of a stack the benchmark started (limit E admits in its slots); undefined for a running one. */
  redisPrefix: string | undefined;
  /** A fresh database URL on the benchmark's Postgres, named for this run and dropped at the end. */
  database(name: string): string;
  /** Starts one more process of a deployable beside the stack's (stopped by `close`), ready when it resolves. */
  start(name: Deployable, extra: ExtraProcess): Promise<StartedProcess>;
  /** Stops what was started, drops the run's databases and deletes its Redis keys. */
  close(): Promise<void>;
}

/**
 * The NODE_OPTIONS a deployable's image sets (deploy/<name>/Dockerfile, read as the deployment checks
 * read it), so the benchmark measures the services as they are deployed; empty when the image sets none.
 */
export function imageNodeOptions(name: Deployable): string {
  return imageNodeOptionsIn(ROOT, name);
}

/** The V8 flags a deployable's image passes on its CMD line, before the script (deploy/<name>/Dockerfile). */
export function imageNodeArgs(name: Deployable): string[] {
  return imageNodeArgsIn(ROOT, name);
}

/**
 * The allocator settings a deployable's image sets (glibc's MALLOC_ARENA_MAX, deploy/<name>/Dockerfile), so the
 * benchmark's resident memory is the image's; a value in the benchmark's own environment wins (to compare).
 */
export function imageAllocatorEnv(name: Deployable): Record<string, string> {
  const fromImage = imageAllocatorEnvIn(ROOT, name);
  for (const key of Object.keys(fromImage)) {
    const own = process.env[key];
    if (own !== undefined) fromImage[key] = own;
  }
  return fromImage;
}

/** The deployable a started process is an instance of (`risk-scaled` is a risk). */
function deployableOf(processName: string): Deployable {
  return (['identity', 'risk', 'gateway'] as const).find((d) => processName === d || processName.startsWith(`${d}-`)) ?? 'risk';
}

/**
 * Starts identity, risk and gateway with the launcher (@platform/stack), as `pnpm start` does but from
 * `pnpm build`'s output (`BENCH_SOURCES`), on free ports, with this run's own databases, Redis prefix and
 * signing key file, or adopts the running stack the configuration names. Either way the scenarios need
 * not know which.
 */
export async function startStack(config: BenchConfig, runId: string, logDir: string): Promise<Stack> {
  if (config.external !== undefined) {
    const fail = () => {
      throw new Error('a running stack (BENCH_*_URL) has no database server or processes of the benchmark');
    };
    return { ...config.external, identityPid: undefined, assertionKey: undefined, redisPrefix: undefined, database: fail, start: fail, close: async () => undefined };
  }
  const assertionKey = randomBytes(32).toString('base64url');
  const stack = await launch({
    env: {
      ...process.env,
      APP_ENV: 'local',
      INTERNAL_ASSERTION_KEY: assertionKey,
      JWT_LOCAL_KEY_FILE: join(logDir, 'jwt-signing-key.pem'),
      BCRYPT_COST: String(config.bcryptCost),
      // One token serves the whole run.
      ACCESS_TOKEN_TTL_S: '3600',
      // Counted as the default is, never reached: the limits count against the same (bench/limits/common.ts).
      GATEWAY_RATE_LIMITS: JSON.stringify({ '*': RATE }),
      // The stack's gateway forwards every lookup: its cache (CONTRACT.md part 17) is measured on a gateway
      // of its own (groups/gateway.ts), beside this one.
      GATEWAY_CACHE_MB: '0',
    },
    // The image's allocator settings (per deployable: an extra process of one gets them too).
    envOf: { identity: imageAllocatorEnv('identity'), risk: imageAllocatorEnv('risk'), gateway: imageAllocatorEnv('gateway') },
    sources: config.sources,
    databases: { serverUrl: config.postgresUrl, run: runId },
    // A stack of its own gets its own Redis namespace, which is emptied at the end.
    redis: { url: config.redisUrl, prefix: `${runId}:` },
    output: { dir: logDir },
    nodeOptions: (name) => config.nodeOptions ?? imageNodeOptions(deployableOf(name)),
    // The image's heap flags are its NODE_OPTIONS and its CMD's: BENCH_NODE_OPTIONS replaces both.
    // A profile is written when the process exits, so it covers the whole run.
    nodeArgs: (name) => [
      ...(config.nodeOptions === undefined ? imageNodeArgs(deployableOf(name)) : []),
      ...config.nodeArgs,
      ...(config.cpuProf.has(name) ? ['--cpu-prof', `--cpu-prof-dir=${logDir}`, `--cpu-prof-name=${name}.cpuprofile`] : []),
    ],
  });
  return {
    gatewayUrl: stack.urls.gateway,
    identityUrl: stack.urls.identity,
    riskUrl: stack.urls.risk,
    riskPid: stack.processOf('risk').pid,
    gatewayPid: stack.processOf('gateway').pid,
    identityPid: stack.processOf('identity').pid,
    assertionKey,
    redisPrefix: `${runId}:`,
    database: (name) => stack.database(name),
    start: (name, extra) => stack.start(name, extra),
    close: async () => {
      await stack.stop();
    },
  };
}

/** A logged-in ADMIN: the bearer token and user id every authenticated scenario uses. */
export interface Session {
  token: string;
  userId: string;
}

/** One signed request through the gateway, for set-up (not measured). */
export async function signedCall(config: BenchConfig, gatewayUrl: string, shape: RequestShape): Promise<{ status: number; body: unknown; headers: Headers }> {
  const url = new URL(shape.target, gatewayUrl);
  const headers = await signOnce({ keyId: config.keyId, secret: config.keySecret }, url, shape);
  const response = await fetch(url, { method: shape.method, headers, body: shape.body });
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
