// Static checks of deploy/<name>/Dockerfile against the code: Node version, what goes into the image,
// user, environment, port, health check and entry point.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ALLOCATOR_ENV } from '@platform/stack';
import { type Deployable, REPO_ROOT, parseDockerfile, readDockerfile, sourceOf, stageEnv } from './deployables.ts';

/** The Node version the workspace pins (the `node` entry of the pnpm catalog). */
export function catalogNodeVersion(): string {
  const workspace = parse(readFileSync(join(REPO_ROOT, 'pnpm-workspace.yaml'), 'utf8')) as { catalog: Record<string, string> };
  return workspace.catalog.node!;
}

function packageJson(d: Deployable): { name: string; main?: string } {
  return JSON.parse(readFileSync(join(REPO_ROOT, d.dir, 'package.json'), 'utf8')) as { name: string; main?: string };
}

/** One line per way the deployable's Dockerfile disagrees with the code or the image rules. */
export function dockerfileProblems(root: string, d: Deployable): string[] {
  const where = `deploy/${d.name}/Dockerfile`;
  const stages = parseDockerfile(readDockerfile(root, d));
  const problems: string[] = [];
  const nodeVersion = catalogNodeVersion();
  if (stages.length < 2) problems.push(`${where}: not multi-stage (build, then a runtime stage without the toolchain)`);
  for (const stage of stages) {
    if (!stage.from.startsWith(`node:${nodeVersion}-`)) problems.push(`${where}: FROM ${stage.from} is not the catalog's Node ${nodeVersion}`);
  }
  const build = stages.slice(0, -1).flatMap((s) => s.instructions);
  const final = stages.at(-1)?.instructions ?? [];
  const pkg = packageJson(d);

  // The base has the catalog's Node: the `node` package's install script (a second copy, about 120 MB
  // downloaded) must not run, so the dependencies' install scripts are off.
  const installs = build.filter((i) => i.op === 'RUN' && /\bpnpm install\b/.test(i.args));
  if (installs.length === 0 || !installs.every((i) => /\s--config\.ignore-dep-scripts=true(\s|$)/.test(i.args))) {
    problems.push(`${where}: the build stage must \`pnpm install --config.ignore-dep-scripts=true\`: the base has Node ${nodeVersion} already, the \`node\` package's install script would download it again`);
  }

  // Only this deployable and its workspace dependencies: `pnpm deploy` of its own package.
  if (!build.some((i) => i.op === 'RUN' && i.args.includes(`pnpm --filter ${pkg.name} deploy --prod`))) {
    problems.push(`${where}: the build stage must \`pnpm --filter ${pkg.name} deploy --prod\``);
  }
  const copies = final.filter((i) => i.op === 'COPY');
  if (!copies.some((c) => /^--from=build\s+\/out\s+\.\/?$/.test(c.args))) problems.push(`${where}: the runtime stage must copy the deploy output (/out)`);
  const destinations = new Set<string>();
  for (const copy of copies) {
    const [, source, destination] = /^--from=build\s+(\S+)\s+(\S+)$/.exec(copy.args) ?? [];
    if (source === undefined || destination === undefined) {
      problems.push(`${where}: runtime COPY ${copy.args} does not come from the build stage`);
    } else if (source !== '/out') {
      if (!source.startsWith('/repo/') || !existsSync(join(REPO_ROOT, source.slice('/repo/'.length)))) problems.push(`${where}: COPY source ${source} is not in the repository`);
      destinations.add(destination);
    }
  }

  const users = final.filter((i) => i.op === 'USER').map((i) => i.args);
  if (users.at(-1) !== 'node') problems.push(`${where}: the runtime stage must end as USER node (non-root), not ${users.at(-1) ?? 'root'}`);
  const env = stageEnv(final);
  const literal = (name: string) => {
    const value = env.get(name);
    return value !== undefined && 'literal' in value ? value.literal : undefined;
  };
  if (literal('NODE_ENV') !== 'production') problems.push(`${where}: NODE_ENV must be production`);
  if (literal('HOST') !== '0.0.0.0') problems.push(`${where}: HOST must be 0.0.0.0 in a container`);
  const port = String(d.spec[d.portKey]?.default);
  if (literal(d.portKey) !== port) problems.push(`${where}: ${d.portKey} must be ${port}, the default of config.ts`);
  // NODE_OPTIONS: V8 flags of the runtime (heap sizing), read by node, not by config.ts.
  const nodeOptions = literal('NODE_OPTIONS');
  if (nodeOptions !== undefined && !/^--max-(semi|old)-space-size=\d+( --max-(semi|old)-space-size=\d+)*$/.test(nodeOptions)) {
    problems.push(`${where}: NODE_OPTIONS may only size the V8 heap (--max-semi-space-size, --max-old-space-size), got ${nodeOptions}`);
  }
  // MALLOC_ARENA_MAX: read by glibc's malloc, not by config.ts; a small count of arenas (packages/stack's ALLOCATOR_ENV).
  const arenas = env.get('MALLOC_ARENA_MAX');
  if (arenas !== undefined && !('literal' in arenas && /^[1-8]$/.test(arenas.literal))) {
    problems.push(`${where}: MALLOC_ARENA_MAX must be a count of glibc malloc arenas from 1 to 8, got ${'literal' in arenas ? arenas.literal : 'a secret'}`);
  }
  for (const [name, value] of env) {
    if (name === 'NODE_ENV' || name === 'NODE_OPTIONS' || (ALLOCATOR_ENV as readonly string[]).includes(name)) continue;
    const field = d.spec[name];
    if (field === undefined) {
      problems.push(`${where}: ENV ${name} is read by no config.ts`);
      continue;
    }
    if ('literal' in value) {
      try {
        field.parse(value.literal);
      } catch (err) {
        problems.push(`${where}: ENV ${name}=${value.literal} ${err instanceof Error ? err.message : String(err)}`);
      }
      // A file the image is told about must be in the image.
      if (value.literal.startsWith('/app/') && !destinations.has(value.literal)) problems.push(`${where}: ${name} names ${value.literal}, which no COPY puts there`);
    }
  }

  const expose = final.filter((i) => i.op === 'EXPOSE').map((i) => i.args);
  const managementPort = d.managementPortKey === undefined ? undefined : String(d.spec[d.managementPortKey]?.default);
  const ports = managementPort === undefined ? port : `${port} ${managementPort}`;
  if (expose.join() !== ports) problems.push(`${where}: EXPOSE ${expose.join()} is not the port ${ports}`);
  if (d.managementPortKey !== undefined && literal(d.managementPortKey) !== managementPort) {
    problems.push(`${where}: ${d.managementPortKey} must be ${managementPort}, the default of config.ts`);
  }
  const healthcheck = final.find((i) => i.op === 'HEALTHCHECK')?.args ?? '';
  if (!healthcheck.includes('/health/live') || !healthcheck.includes(`process.env.${d.portKey}`)) {
    problems.push(`${where}: HEALTHCHECK must call /health/live on $${d.portKey}`);
  }
  // CMD: node on the compiled entry; between them only the V8 memory flags NODE_OPTIONS refuses, in this order.
  const cmd = final.filter((i) => i.op === 'CMD').at(-1)?.args;
  if (cmd === undefined || !/^\["node", ("--heap-growing-percent=\d+", )?("--no-maglev", )?"dist\/src\/index\.js"\]$/.test(cmd)) {
    problems.push(`${where}: CMD must be ["node", "dist/src/index.js"], with at most --heap-growing-percent=<n> and --no-maglev before the script, got ${cmd}`);
  }
  if (pkg.main !== './dist/src/index.js' || sourceOf(d, 'dist/src/index.js') === undefined) {
    problems.push(`${where}: ${d.dir}/package.json main (${pkg.main}) is not dist/src/index.js compiled from src/index.ts`);
  }
  return problems;
}
