// Sums a V8 CPU profile (`node --cpu-prof`, or BENCH_CPU_PROF=risk,gateway during `pnpm bench`) by
// self time per function and per package, to see where a hot path spends its time.
// Usage: pnpm bench:profile-summary <file.cpuprofile> [top] (on the workspace's Node 24, which runs TypeScript)
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The package (or workspace directory, or node internal) a script URL belongs to. */
function packageOf(url: string): string {
  if (url === '') return '(native / idle / gc)';
  if (url.startsWith('node:')) return 'node internals';
  const pnpm = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pnpm?.[1] !== undefined) return pnpm[1];
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (module?.[1] !== undefined) return module[1];
  const workspace = /\/((?:gateway|services\/[^/]+|packages\/[^/]+))\/src\//.exec(url);
  return workspace?.[1] ?? url;
}

/** Self time (ms) per function and per package, largest first. */
export function summarise(profile: Profile): { totalMs: number; functions: Array<[string, number]>; packages: Array<[string, number]> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000));
  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  for (const [id, ms] of self) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) continue;
    const where = frame.url.replace(/^.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '').replace(/^file:\/\/.*?\/(gateway|services|packages)\//, '$1/');
    const name = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + ms);
    packages.set(packageOf(frame.url), (packages.get(packageOf(frame.url)) ?? 0) + ms);
  }
  const sorted = (m: Map<string, number>) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  return { totalMs: (profile.endTime - profile.startTime) / 1000, functions: sorted(functions), packages: sorted(packages) };
}

if (import.meta.main) {
  const [file, topText] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write('usage: pnpm bench:profile-summary <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  const top = Number(topText ?? 30);
  const { totalMs, functions, packages } = summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile);
  const line = ([name, ms]: [string, number]) => `${((ms / totalMs) * 100).toFixed(1).padStart(5)}%  ${ms.toFixed(0).padStart(7)} ms  ${name}\n`;
  process.stdout.write(`total ${totalMs.toFixed(0)} ms\n\nby package (self time):\n`);
  for (const entry of packages.slice(0, top)) process.stdout.write(line(entry));
  process.stdout.write('\nby function (self time):\n');
  for (const entry of functions.slice(0, top)) process.stdout.write(line(entry));
}
