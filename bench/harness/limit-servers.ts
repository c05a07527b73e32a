// Starting the limit servers (bench/limits/<name>.ts): each in its own process, with the V8 flags of the
// deployable whose work it stands for, so a limit and the service it is compared with run alike.
import { type StartedProcess, freePort, startProcess, untilOk } from '@platform/stack';
import type { RunContext } from './context.ts';
import type { Stack } from './stack.ts';
import { imageAllocatorEnv, imageNodeArgs, imageNodeOptions } from './stack.ts';

/** The limits, by file name under bench/limits/, and the deployable each stands for (whose image flags it gets). */
export const LIMITS = {
  'bare-node': { letter: 'A', deployable: 'risk' },
  'bare-express': { letter: 'B', deployable: 'risk' },
  'express-proxy': { letter: 'C', deployable: 'gateway' },
  'lean-proxy': { letter: 'C′', deployable: 'gateway' },
  contract: { letter: 'D', deployable: 'gateway' },
  checks: { letter: 'E', deployable: 'gateway' },
  'lean-checks': { letter: 'E′', deployable: 'gateway' },
  'traced-lean-checks': { letter: 'E′ traced', deployable: 'gateway' },
  'enveloped-checks': { letter: 'E′ enveloped', deployable: 'gateway' },
  'stored-checks': { letter: 'G', deployable: 'gateway' },
  'round-trip': { letter: 'G bare', deployable: 'gateway' },
  'lean-stored-checks': { letter: 'G′', deployable: 'gateway' },
  'lean-risk': { letter: 'H', deployable: 'risk' },
} as const;
export type LimitName = keyof typeof LIMITS;

/** A started limit: its process, URL and the name its CPU is recorded under (`limit-c`, `limit-c-lean`…). */
export interface Limit extends StartedProcess {
  /** The name of its CPU figure in the results: `limit-` and its letter (′ spelt `-lean`). */
  cpuName: string;
}

/** The name a limit's CPU is recorded under: `limit-c`, `limit-c-lean` for C′, `limit-e-lean-traced` for E′ traced. */
export function cpuNameOf(name: LimitName): string {
  const [letter = '', ...words] = LIMITS[name].letter.split(' ');
  return `limit-${letter.replace('′', '').toLowerCase()}${letter.endsWith('′') ? '-lean' : ''}${words.map((word) => `-${word}`).join('')}`;
}

/** One more instance of a limit beside others: its own name (its CPU figure, log and profile) and environment (OTEL_*). */
export interface LimitLaunch {
  as?: string;
  env?: Readonly<Record<string, string>>;
}

/**
 * Starts limit `name` with `--port` and `options` (named, without their dashes), its log in the run's
 * directory, under `--cpu-prof` when BENCH_CPU_PROF names it (or `launch.as`); resolves once `path` answers 200.
 */
export async function startLimit(
  ctx: RunContext,
  name: LimitName,
  options: Readonly<Record<string, string | undefined>> = {},
  path = '/health/live',
  launch: LimitLaunch = {},
): Promise<Limit> {
  const port = await freePort();
  const cpuName = launch.as ?? cpuNameOf(name);
  const args = ['--port', String(port), ...Object.entries(options).flatMap(([flag, value]) => (value === undefined ? [] : [`--${flag}=${value}`]))];
  const { deployable } = LIMITS[name];
  const profile = ctx.config.cpuProf.has(cpuName) ? ['--cpu-prof', `--cpu-prof-dir=${ctx.logDir}`, `--cpu-prof-name=${cpuName}.cpuprofile`] : [];
  // The image's flags unless BENCH_NODE_OPTIONS replaces them, and BENCH_NODE_ARGS, as for the stack's services (stack.ts).
  const nodeOptions = ctx.config.nodeOptions ?? imageNodeOptions(deployable);
  const imageArgs = ctx.config.nodeOptions === undefined ? imageNodeArgs(deployable) : [];
  const env = { ...process.env, ...imageAllocatorEnv(deployable), ...launch.env, NODE_OPTIONS: nodeOptions };
  const server = startProcess({ name: cpuName, entry: `bench/limits/${name}.ts`, args, env, nodeArgs: [...imageArgs, ...ctx.config.nodeArgs, ...profile], url: `http://127.0.0.1:${port}`, output: { dir: ctx.logDir } });
  if (!(await untilOk(`${server.url}${path}`, Date.now() + 15_000, server))) {
    await server.stop();
    throw new Error(`${cpuName} never answered ${path}; see ${server.log}`);
  }
  return Object.assign(server, { cpuName });
}

/** The options of a checking limit (E, E′) or limit H on the stack: its Redis prefix, identity's keys, its issuer. */
export function stackOptions(ctx: RunContext, stack: Stack, redisPrefix: string): Record<string, string | undefined> {
  return {
    target: stack.riskUrl,
    'redis-url': ctx.config.redisUrl,
    'key-secret': ctx.config.keySecret,
    'redis-prefix': redisPrefix,
    'jwks-url': new URL('/.well-known/jwks.json', stack.identityUrl).href,
    // The stack's TOKEN_ISSUER is its gateway's origin (@platform/stack).
    issuer: new URL(stack.gatewayUrl).origin,
    'assertion-key': stack.assertionKey,
  };
}

/** Starts several limits; stops the ones already started when one fails. */
export async function startLimits(ctx: RunContext, specs: ReadonlyArray<readonly [LimitName, Readonly<Record<string, string | undefined>>?, string?, LimitLaunch?]>): Promise<Limit[]> {
  const started: Limit[] = [];
  try {
    for (const [name, options, path, launch] of specs) started.push(await startLimit(ctx, name, options, path, launch));
    return started;
  } catch (err) {
    await stopAll(started);
    throw err;
  }
}

/** Stops limits (those that were started). */
export async function stopAll(limits: ReadonlyArray<StartedProcess | undefined>): Promise<void> {
  await Promise.all(limits.map((limit) => limit?.stop()));
}

/**
 * The forwarding limits beside the stack's risk: C, C′ and (with the stack's own Redis prefix, which a
 * running stack does not give) E′, G (E′'s checks answered from memory, beside a cached hit), E′
 * enveloped (E′ writing the gateway's per-request output), G bare (a hit's round trip alone) and G′ (G's work with none of
 * the packages' code on its path); stopped by the caller.
 */
export async function startForwardingLimits(ctx: RunContext, stack: Stack): Promise<Limit[]> {
  const prefix = stack.redisPrefix;
  const inPrefix =
    prefix === undefined
      ? []
      : [
          ...(['lean-checks', 'stored-checks', 'enveloped-checks'] as const).map((name) => [name, stackOptions(ctx, stack, prefix)] as const),
          ['round-trip', { 'redis-url': ctx.config.redisUrl, 'redis-prefix': prefix }] as const,
          ['lean-stored-checks', stackOptions(ctx, stack, prefix)] as const,
        ];
  return await startLimits(ctx, [['express-proxy', { target: stack.riskUrl }], ['lean-proxy', { target: stack.riskUrl }], ...inPrefix]);
}
