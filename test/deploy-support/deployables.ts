// What the deployment checks know about each deployable, read from the code itself: its config spec
// (every variable config.ts reads), its port, its one-shot scripts, and its Dockerfile.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APP_ENVS, type ConfigSpec } from '@platform/service-kit';
import { ALLOCATOR_ENV, type EnvValue } from '@platform/stack';
import { type GatewayConfig, gatewayConfigProblems, gatewayConfigSpec } from '../../gateway/src/config.ts';
import { type IdentityConfig, identityConfigProblems, identityConfigSpec } from '../../services/identity/src/config.ts';
import { riskConfigSpec } from '../../services/risk/src/config.ts';

/** The repository the code lives in (the deployment files may be a mutated copy elsewhere). */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export type DeployableName = 'gateway' | 'identity' | 'risk';

export interface Deployable {
  name: DeployableName;
  /** The workspace package, relative to the repository. */
  dir: string;
  /** The variable naming its port. */
  portKey: string;
  /** The variable naming its management port (metrics and health only), if it has one. */
  managementPortKey?: string;
  /** The variable naming its metrics port (`/metrics` only, off by default; the cluster sets it), if it has one. */
  metricsPortKey?: string;
  spec: ConfigSpec;
  /** The cross-key rules its composition root applies after parsing. */
  refine?: (config: Record<string, unknown>) => string[];
  /** Its one-shot scripts (as run in the image) and the only variables each reads besides APP_ENV. */
  scripts: Record<string, string[]>;
}

export const DEPLOYABLES: readonly Deployable[] = [
  {
    name: 'gateway',
    dir: 'gateway',
    portKey: 'GATEWAY_PORT',
    managementPortKey: 'GATEWAY_MANAGEMENT_PORT',
    spec: gatewayConfigSpec,
    refine: (config) => gatewayConfigProblems(config as unknown as GatewayConfig),
    scripts: {},
  },
  {
    name: 'identity',
    dir: 'services/identity',
    portKey: 'IDENTITY_PORT',
    metricsPortKey: 'IDENTITY_METRICS_PORT',
    spec: identityConfigSpec,
    refine: (config) => identityConfigProblems(config as unknown as IdentityConfig),
    scripts: { 'dist/src/migrate.js': ['IDENTITY_DATABASE_URL', 'LOG_LEVEL'] },
  },
  {
    name: 'risk',
    dir: 'services/risk',
    portKey: 'RISK_PORT',
    metricsPortKey: 'RISK_METRICS_PORT',
    spec: riskConfigSpec,
    scripts: { 'dist/src/migrate.js': ['RISK_DATABASE_URL', 'LOG_LEVEL'], 'dist/src/seed.js': ['RISK_DATABASE_URL', 'LOG_LEVEL'] },
  },
];

/** The deployable by name. */
export function deployable(name: DeployableName): Deployable {
  return DEPLOYABLES.find((d) => d.name === name)!;
}

/** Where a variable's value comes from: written in the file, or a Secret (whose value is never seen here). */
export type { EnvValue };

// Set by the images themselves or read by the scripts, node or the C library (ALLOCATOR_ENV), not by config.ts.
const NOT_IN_SPECS = new Set(['APP_ENV', 'NODE_ENV', 'NODE_OPTIONS', ...ALLOCATOR_ENV]);

/** The port a deployable listens on with this environment (or the one `key` names). */
export function portOf(d: Deployable, env: ReadonlyMap<string, EnvValue>, key = d.portKey): number {
  const value = env.get(key);
  return value !== undefined && 'literal' in value ? Number(value.literal) : Number(d.spec[key]?.default);
}

/** The value a variable resolves to with this environment: set, or its default, as config.ts would pick. */
export function resolvedValue(spec: ConfigSpec, env: ReadonlyMap<string, EnvValue>, name: string): unknown {
  const value = env.get(name);
  if (value !== undefined) return 'literal' in value ? value.literal : `<Secret ${value.secret}>`;
  const appEnv = env.get('APP_ENV');
  const local = appEnv === undefined || ('literal' in appEnv && appEnv.literal === 'local');
  return local && spec[name]?.localDefault !== undefined ? spec[name]?.localDefault : spec[name]?.default;
}

/**
 * What would stop a process from starting with this environment, as its config.ts would see it: a key
 * without a value or a default for its APP_ENV, a value that does not parse, a cross-key rule broken.
 * Also a variable that no config reads (a typo), and a secret written as a literal outside `local`.
 */
export function configProblems(where: string, spec: ConfigSpec, env: ReadonlyMap<string, EnvValue>, refine?: Deployable['refine']): string[] {
  const problems: string[] = [];
  const appEnvValue = env.get('APP_ENV');
  const appEnv = appEnvValue === undefined ? 'local' : 'literal' in appEnvValue ? appEnvValue.literal : '(from a Secret)';
  if (!(APP_ENVS as readonly string[]).includes(appEnv)) problems.push(`${where}: APP_ENV must be one of ${APP_ENVS.join(', ')}, got ${appEnv}`);
  for (const name of env.keys()) {
    if (!(name in spec) && !NOT_IN_SPECS.has(name)) problems.push(`${where}: ${name} is set but read by no config.ts`);
  }
  const config: Record<string, unknown> = { APP_ENV: appEnv };
  for (const [name, field] of Object.entries(spec)) {
    const set = env.get(name);
    // As loadConfig reads it: an empty value is no value.
    const value = set !== undefined && 'literal' in set && set.literal.trim() === '' ? undefined : set;
    const other = field.unlessSet === undefined ? undefined : env.get(field.unlessSet);
    if (value === undefined) {
      // Not needed when the key it gives way to is set (REDIS_URL beside REDIS_CLUSTER_NODES).
      if (other !== undefined && !('literal' in other && other.literal.trim() === '')) continue;
      if (appEnv === 'local' && field.localDefault !== undefined) config[name] = field.localDefault;
      else if (field.default !== undefined) config[name] = field.default;
      else problems.push(`${where}: ${name} is required in APP_ENV=${appEnv} and not set (${field.doc})`);
    } else if ('secret' in value) {
      config[name] = `<Secret ${value.secret}>`;
    } else {
      if (field.secret && appEnv !== 'local') problems.push(`${where}: ${name} is a secret: outside local it must come from a Secret`);
      try {
        config[name] = field.parse(value.literal);
      } catch (err) {
        problems.push(`${where}: ${name}=${field.secret ? '[redacted]' : value.literal} ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  if (problems.length === 0 && refine !== undefined) problems.push(...refine(config).map((p) => `${where}: ${p}`));
  return problems;
}

/** The part of a spec one of its scripts reads (migrate.ts and seed.ts pick their keys from it). */
export function scriptSpec(d: Deployable, script: string): ConfigSpec {
  return Object.fromEntries((d.scripts[script] ?? []).map((key) => [key, d.spec[key]!]));
}

/** The TypeScript source of a compiled path of the package (`dist/src/migrate.js` → `src/migrate.ts`), if it exists. */
export function sourceOf(d: Deployable, compiled: string): string | undefined {
  const source = join(REPO_ROOT, d.dir, compiled.replace(/^dist\//, '').replace(/\.js$/, '.ts'));
  return existsSync(source) ? source : undefined;
}

// The Dockerfile reader is the launcher's (@platform/stack), which the benchmark reads images' NODE_OPTIONS with.
export { type DockerInstruction, imageEnv, imageNodeArgs, parseDockerfile, readDockerfile, stageEnv } from '@platform/stack';
