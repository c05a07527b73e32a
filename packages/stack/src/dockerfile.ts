// The deployables' Dockerfiles as the deployment checks read them, and as the benchmark reads an image's
// NODE_OPTIONS from them: one reader, so the two can never disagree on what an image sets.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where a variable's value comes from: written in the file, or a Secret (whose value is never seen here). */
export type EnvValue = { literal: string } | { secret: string };

/** One instruction of a Dockerfile, continuation lines joined. */
export interface DockerInstruction {
  op: string;
  args: string;
}

/** The stages of a Dockerfile: each FROM and the instructions after it. */
export function parseDockerfile(text: string): Array<{ from: string; instructions: DockerInstruction[] }> {
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  const stages: Array<{ from: string; instructions: DockerInstruction[] }> = [];
  for (const line of lines) {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!match || line.trimStart().startsWith('#')) continue;
    const [, op, args] = match as unknown as [string, string, string];
    if (op === 'FROM') stages.push({ from: args.split(/\s+/)[0] ?? '', instructions: [] });
    else stages.at(-1)?.instructions.push({ op, args: args.trim() });
  }
  return stages;
}

/** The variables a stage's ENV instructions set (`ENV A=1 B=2`). */
export function stageEnv(instructions: readonly DockerInstruction[]): Map<string, EnvValue> {
  const env = new Map<string, EnvValue>();
  for (const { op, args } of instructions) {
    if (op !== 'ENV') continue;
    // `A=1 B="two words"`: a value is a double-quoted string (quotes removed) or runs to the next space.
    for (const [, name, quoted, plain] of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"]*)"|(\S*))/g)) {
      if (name !== undefined) env.set(name, { literal: quoted ?? plain ?? '' });
    }
  }
  return env;
}

/** The Dockerfile of a deployable, read from a deployment tree. */
export function readDockerfile(root: string, d: { name: string }): string {
  return readFileSync(join(root, 'deploy', d.name, 'Dockerfile'), 'utf8');
}

/** The variables the final stage of the deployable's image sets. */
export function imageEnv(root: string, d: { name: string }): Map<string, EnvValue> {
  return stageEnv(parseDockerfile(readDockerfile(root, d)).at(-1)?.instructions ?? []);
}

/** The NODE_OPTIONS a deployable's image sets (its V8 heap flags); empty when it sets none. */
export function imageNodeOptions(root: string, name: string): string {
  const value = imageEnv(root, { name }).get('NODE_OPTIONS');
  return value !== undefined && 'literal' in value ? value.literal : '';
}

/**
 * What the C library, not node or config.ts, reads of an image's environment: glibc's malloc arenas.
 * Each thread that allocates may get an arena of its own (up to 8 per core), and Node runs several (libuv's
 * pool, V8's platform workers): what they touched stays resident. Two arenas kept the bench's peak resident
 * memory ~10-15 MB lower, CPU per answer within the runs' spread (deploy/gateway/Dockerfile).
 */
export const ALLOCATOR_ENV = ['MALLOC_ARENA_MAX'] as const;

/** The allocator settings (`ALLOCATOR_ENV`) a deployable's image sets, as a process environment gets them. */
export function imageAllocatorEnv(root: string, name: string): Record<string, string> {
  const env = imageEnv(root, { name });
  const out: Record<string, string> = {};
  for (const key of ALLOCATOR_ENV) {
    const value = env.get(key);
    if (value !== undefined && 'literal' in value) out[key] = value.literal;
  }
  return out;
}

/**
 * The node flags a deployable's image puts before its script in the final stage's CMD
 * (`["node", "--heap-growing-percent=20", "--no-maglev", "dist/src/index.js"]` → both flags): V8 flags
 * that NODE_OPTIONS refuses. Empty when the CMD has none or is not that exec form.
 */
export function imageNodeArgs(root: string, name: string): string[] {
  const cmd = parseDockerfile(readDockerfile(root, { name }))
    .at(-1)
    ?.instructions.filter((i) => i.op === 'CMD')
    .at(-1)?.args;
  let argv: unknown;
  try {
    argv = JSON.parse(cmd ?? '[]');
  } catch {
    return [];
  }
  if (!Array.isArray(argv) || argv[0] !== 'node' || !argv.every((a) => typeof a === 'string')) return [];
  return (argv as string[]).slice(1, -1);
}
