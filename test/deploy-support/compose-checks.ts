// Static checks of docker-compose.yml: the Compose specification's JSON schema (the copy dclint ships),
// then what the schema cannot know: images and Dockerfiles, environment against config.ts, ports,
// health checks and start order.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { DEPLOYABLES, type EnvValue, configProblems, imageEnv, portOf, scriptSpec, sourceOf } from './deployables.ts';

interface ComposeService {
  image?: string;
  profiles?: string[];
  build?: { context?: string; dockerfile?: string };
  command?: string[];
  ports?: unknown[];
  healthcheck?: { test?: string[] };
  environment?: Record<string, string | number | boolean | null>;
  depends_on?: Record<string, { condition?: string }>;
}

/** docker-compose.yml of a deployment tree, YAML merge keys applied. */
export function readCompose(root: string): { services: Record<string, ComposeService> } {
  return parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
}

/** The compose-spec schema as dclint (an npm linter for compose files) ships it. */
function composeSchema(): Record<string, unknown> {
  const dclint = dirname(createRequire(import.meta.url).resolve('dclint/package.json'));
  const schema = JSON.parse(readFileSync(join(dclint, 'schemas', 'compose.schema.json'), 'utf8')) as Record<string, unknown>;
  // Its `$schema` names draft-07 by an https URL that Ajv's bundled meta-schema is not registered under.
  delete schema.$schema;
  return schema;
}

/** One line per schema violation of the compose file. */
export function composeSchemaProblems(root: string): string[] {
  const ajv = new Ajv({ allErrors: true, strict: false });
  const validate = ajv.compile(composeSchema());
  if (validate(readCompose(root))) return [];
  return (validate.errors ?? []).map((e) => `docker-compose.yml${e.instancePath}: ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
}

/** `${NAME:-default}` and `${NAME}` as compose resolves them when NAME is not set where it runs: the default, or empty. */
const interpolated = (value: string): string => value.replace(/\$\{\w+(?::?-([^}]*))?\}/g, (_m, fallback: string | undefined) => fallback ?? '');

function environment(service: ComposeService): Map<string, EnvValue> {
  return new Map(Object.entries(service.environment ?? {}).map(([k, v]) => [k, { literal: interpolated(String(v ?? '')) }]));
}

const condition = (service: ComposeService, on: string) => service.depends_on?.[on]?.condition;

/** One line per way the compose file disagrees with the code or the local environment's rules. */
export function composeProblems(root: string): string[] {
  const { services } = readCompose(root);
  const problems: string[] = [];
  const ports = new Map<string, number>();
  for (const d of DEPLOYABLES) {
    const service = services[d.name];
    if (service === undefined) {
      problems.push(`docker-compose.yml: no service ${d.name}`);
      continue;
    }
    const where = `docker-compose.yml ${d.name}`;
    if (service.image !== `identity-risk-platform/${d.name}:local`) problems.push(`${where}: image ${service.image} is not identity-risk-platform/${d.name}:local`);
    if (service.build?.dockerfile !== `deploy/${d.name}/Dockerfile` || !existsSync(join(root, `deploy/${d.name}/Dockerfile`))) {
      problems.push(`${where}: must build deploy/${d.name}/Dockerfile`);
    }
    // What the container sees: the image's ENV, then the compose environment on top.
    const env = new Map([...imageEnv(root, d), ...environment(service)]);
    if (env.get('APP_ENV') === undefined || !('literal' in env.get('APP_ENV')!) || (env.get('APP_ENV') as { literal: string }).literal !== 'local') {
      problems.push(`${where}: APP_ENV must be local`);
    }
    problems.push(...configProblems(where, d.spec, env, d.refine));
    const port = portOf(d, env);
    ports.set(d.name, port);
    const check = service.healthcheck?.test?.join(' ') ?? '';
    if (!check.includes(`127.0.0.1:${port}/health/`)) problems.push(`${where}: health check must call /health/… on its port ${port}`);
    if (condition(service, 'redis') !== 'service_healthy') problems.push(`${where}: must wait for a healthy redis`);
  }

  // Only the gateway is published, on its own port; the observability profile's UIs on the loopback only.
  for (const [name, service] of Object.entries(services)) {
    if (service.ports === undefined) continue;
    const observability = service.profiles?.includes('observability') === true;
    if (observability && service.ports.every((p) => typeof p === 'string' && p.startsWith('127.0.0.1:'))) continue;
    if (name !== 'gateway') problems.push(`docker-compose.yml ${name}: publishes ports; only the gateway may (and the observability profile on 127.0.0.1)`);
    else if (JSON.stringify(service.ports) !== JSON.stringify([`${ports.get('gateway')}:${ports.get('gateway')}`])) {
      problems.push(`docker-compose.yml gateway: must publish exactly ${ports.get('gateway')}:${ports.get('gateway')}`);
    }
  }
  for (const name of ['postgres', 'redis']) {
    if (services[name]?.healthcheck?.test === undefined) problems.push(`docker-compose.yml ${name}: needs a health check`);
  }
  // CONTRACT.md part 13: Redis keeps its data across a restart (an append-only file, fsync every second) on a volume.
  const redisCommand = ((services.redis as { command?: unknown } | undefined)?.command as string[] | undefined)?.join(' ') ?? '';
  if (!/--appendonly yes\b/.test(redisCommand) || !/--appendfsync everysec\b/.test(redisCommand)) {
    problems.push('docker-compose.yml redis: must run with --appendonly yes --appendfsync everysec (CONTRACT.md part 13)');
  }
  // An evicting Redis drops nonces and revocations one by one, which no ledger notices (docs/deploy.md: "Redis must never evict").
  if (!/--maxmemory-policy noeviction\b/.test(redisCommand)) problems.push('docker-compose.yml redis: must run with --maxmemory-policy noeviction');
  if (((services.redis as { volumes?: unknown[] } | undefined)?.volumes ?? []).length === 0) problems.push('docker-compose.yml redis: its data must be on a volume');

  // Start order: migrations and the seed once, before the services; the gateway last.
  const order: Array<[string, string, string]> = [
    ['identity-migrate', 'postgres', 'service_healthy'],
    ['risk-migrate', 'postgres', 'service_healthy'],
    ['risk-seed', 'risk-migrate', 'service_completed_successfully'],
    ['identity', 'identity-migrate', 'service_completed_successfully'],
    ['risk', 'risk-seed', 'service_completed_successfully'],
    ['gateway', 'identity', 'service_healthy'],
    ['gateway', 'risk', 'service_healthy'],
  ];
  for (const [name, on, wanted] of order) {
    const service = services[name];
    if (service === undefined) problems.push(`docker-compose.yml: no service ${name}`);
    else if (condition(service, on) !== wanted) problems.push(`docker-compose.yml ${name}: must depend on ${on} with condition ${wanted}`);
  }

  // The one-shot steps: an existing script of the image, handed only what that script reads.
  for (const [name, service] of Object.entries(services)) {
    const d = DEPLOYABLES.find((x) => service.image === `identity-risk-platform/${x.name}:local`);
    if (d === undefined || name === d.name) continue;
    const script = service.command?.[1] ?? '';
    if (service.command?.[0] !== 'node' || d.scripts[script] === undefined || sourceOf(d, script) === undefined) {
      problems.push(`docker-compose.yml ${name}: command ${JSON.stringify(service.command)} is not one of ${d.name}'s scripts`);
      continue;
    }
    problems.push(...configProblems(`docker-compose.yml ${name}`, scriptSpec(d, script), environment(service)));
  }

  // Every URL naming a compose service uses that service's port.
  for (const [name, service] of Object.entries(services)) {
    for (const [key, value] of Object.entries(service.environment ?? {})) {
      if (typeof value !== 'string' || !URL.canParse(value) || !new URL(value).protocol.startsWith('http')) continue;
      const url = new URL(value);
      const target = ports.get(url.hostname);
      if (target !== undefined && Number(url.port) !== target) problems.push(`docker-compose.yml ${name}: ${key} points at ${url.hostname}:${url.port}, which listens on ${target}`);
    }
  }
  return problems;
}
