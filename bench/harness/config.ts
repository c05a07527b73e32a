import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

/** The scenario groups of one run, in the order they run. */
export const GROUPS = ['limits', 'risk', 'gateway', 'latency', 'login', 'scale', 'ratelimit', 'tracing', 'users', 'hardening', 'pipeline'] as const;
/** The groups a run without BENCH_ONLY measures: every speed target is judged from them. */
export const DECISION_GROUPS = ['risk', 'gateway', 'latency', 'tracing'] as const satisfies readonly (typeof GROUPS)[number][];
/** One scenario group; `BENCH_ONLY` picks some of them (`all`: every one). */
export type Group = (typeof GROUPS)[number];

/** Where a running stack is, when the benchmark should not start its own. */
export interface ExternalStack {
  gatewayUrl: string;
  identityUrl: string;
  riskUrl: string;
  /** Process ids to read resident memory from; without them memory is not reported. */
  riskPid: number | undefined;
  gatewayPid: number | undefined;
}

/** Everything a run is told by its environment, parsed once. */
export interface BenchConfig {
  /** Measured seconds of each closed-loop or fixed-rate scenario. */
  durationS: number;
  /** Seconds of unmeasured load before each measured one, so the JIT and pools are warm. */
  warmupS: number;
  /** Rounds of a comparison measured by turns (measureClosedInTurns): its figures are the medians. */
  rounds: number;
  /** Concurrent connections of the throughput scenarios. */
  connections: number;
  /** The light fixed rate of the latency scenarios, requests per second. */
  rate: number;
  /**
   * The one rate at which limit C and the gateway are also measured (CPU per answer at the same pace): a
   * process handles more answers per event-loop wake-up the faster it is driven, so under a closed loop
   * the gateway (half limit C's rate on 2 cores) pays its per-wake-up costs over fewer answers.
   */
  equalRate: number;
  /** The one rate at which tracing off, every span and 1 in 10 are also measured (below the traced chain's closed-loop rate). */
  tracingRate: number;
  /** Concurrent logins in the login scenario. */
  logins: number;
  /** How many times the real station set the scale scenario loads. */
  scale: number;
  /** How many users the user search scenario loads into its scratch database. */
  users: number;
  groups: ReadonlySet<Group>;
  /**
   * The processes whose scenarios the `gateway` group measures (BENCH_GATEWAY_SCENARIOS), by their CPU names;
   * undefined: every one. Every process is still started and primed with both lookups, so a figure is the one
   * a whole run gives, with fewer scenarios between two turns of it.
   */
  gatewayScenarios: ReadonlySet<string> | undefined;
  resultsDir: string;
  /** Keep the started processes' logs after a successful run (they are kept after a failure anyway). */
  keepLogs: boolean;
  external: ExternalStack | undefined;
  postgresUrl: string;
  redisUrl: string;
  keyId: string;
  keySecret: string;
  adminUsername: string;
  adminPassword: string;
  /** The bcrypt cost the identity service is started with (and the reference compare is timed at). */
  bcryptCost: number;
  cores: number;
  /**
   * How the services run: `dist` (default) as in production, from `pnpm build`'s output, which `pnpm bench`
   * runs first; `ts` from the TypeScript sources as `pnpm start` does (type stripping costs memory).
   */
  sources: 'dist' | 'ts';
  /** NODE_OPTIONS for the services the benchmark starts; by default each gets its image's (deploy/<name>/Dockerfile), `''` for none. */
  nodeOptions: string | undefined;
  /** Extra node arguments of the started services that NODE_OPTIONS refuses (`--trace-gc`, say); none by default. */
  nodeArgs: readonly string[];
  /** Started processes (by name: identity, risk, gateway) to run under `--cpu-prof`, profiles kept in the log dir. */
  cpuProf: ReadonlySet<string>;
}

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function number(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) throw new Error(`${name} must be a number ≥ ${min}, not "${raw}"`);
  return value;
}

function groupsOf(raw: string | undefined): Set<Group> {
  // By default the decision groups: the ones the speed targets are judged from (bench/README.md).
  if (raw === undefined || raw.trim() === '') return new Set(DECISION_GROUPS);
  if (raw.trim() === 'all') return new Set(GROUPS);
  const picked = raw.split(',').map((s) => s.trim());
  for (const name of picked) {
    if (!(GROUPS as readonly string[]).includes(name)) throw new Error(`BENCH_ONLY: unknown group "${name}" (known: ${GROUPS.join(', ')})`);
  }
  return new Set(picked as Group[]);
}

/** The processes the `gateway` group serves its scenarios through, by their CPU names (as the figures name them). */
export const GATEWAY_SCENARIO_PROCESSES = ['limit-c', 'limit-c-lean', 'limit-e-lean', 'limit-e-lean-enveloped', 'gateway', 'limit-g', 'limit-g-bare', 'limit-g-lean', 'gateway-cached'] as const;

function gatewayScenariosOf(raw: string | undefined): Set<string> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const picked = raw.split(',').map((s) => s.trim());
  for (const name of picked) {
    if (!(GATEWAY_SCENARIO_PROCESSES as readonly string[]).includes(name)) {
      throw new Error(`BENCH_GATEWAY_SCENARIOS: unknown process "${name}" (known: ${GATEWAY_SCENARIO_PROCESSES.join(', ')})`);
    }
  }
  return new Set(picked);
}

function externalOf(env: NodeJS.ProcessEnv): ExternalStack | undefined {
  const { BENCH_GATEWAY_URL: gatewayUrl, BENCH_IDENTITY_URL: identityUrl, BENCH_RISK_URL: riskUrl } = env;
  if (gatewayUrl === undefined && identityUrl === undefined && riskUrl === undefined) return undefined;
  if (gatewayUrl === undefined || identityUrl === undefined || riskUrl === undefined) {
    throw new Error('a running stack needs all three of BENCH_GATEWAY_URL, BENCH_IDENTITY_URL and BENCH_RISK_URL');
  }
  const pid = (name: string) => (env[name] === undefined ? undefined : number(env, name, 0, 1));
  return { gatewayUrl, identityUrl, riskUrl, riskPid: pid('BENCH_RISK_PID'), gatewayPid: pid('BENCH_GATEWAY_PID') };
}

/** Reads the `BENCH_*` variables (bench/README.md lists them); throws naming a bad one. */
export function loadBenchConfig(env: NodeJS.ProcessEnv = process.env): BenchConfig {
  return {
    durationS: number(env, 'BENCH_DURATION_S', 2.5, 1),
    warmupS: number(env, 'BENCH_WARMUP_S', 2, 0),
    rounds: number(env, 'BENCH_ROUNDS', 3, 1),
    connections: number(env, 'BENCH_CONNECTIONS', 50, 1),
    rate: number(env, 'BENCH_RATE', 500, 1),
    equalRate: number(env, 'BENCH_EQUAL_RATE', 1500, 1),
    tracingRate: number(env, 'BENCH_TRACING_RATE', 1000, 1),
    logins: number(env, 'BENCH_LOGINS', 10, 1),
    scale: number(env, 'BENCH_SCALE', 100, 2),
    users: number(env, 'BENCH_USERS', 1_000_000, 1000),
    groups: groupsOf(env.BENCH_ONLY),
    gatewayScenarios: gatewayScenariosOf(env.BENCH_GATEWAY_SCENARIOS),
    resultsDir: env.BENCH_RESULTS_DIR ?? `${ROOT}bench/results`,
    keepLogs: env.BENCH_KEEP_LOGS === '1',
    external: externalOf(env),
    postgresUrl: env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    redisUrl: env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/0',
    keyId: env.BENCH_KEY_ID ?? 'local-dev',
    keySecret: env.BENCH_KEY_SECRET ?? 'local-dev-secret',
    adminUsername: env.BENCH_ADMIN_USERNAME ?? 'admin@example.com',
    adminPassword: env.BENCH_ADMIN_PASSWORD ?? 'local-admin-password',
    bcryptCost: number(env, 'BCRYPT_COST', 10, 4),
    cores: availableParallelism(),
    nodeOptions: env.BENCH_NODE_OPTIONS,
    nodeArgs: (env.BENCH_NODE_ARGS ?? '').split(' ').filter((s) => s !== ''),
    sources: env.BENCH_SOURCES === 'ts' ? 'ts' : 'dist',
    cpuProf: new Set((env.BENCH_CPU_PROF ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')),
  };
}
