// Groups a `perf record` of a whole process (every thread, kernel and user) by the kind of work, per
// answer: where the V8 profile (profile-summary.ts) sees only the main thread's JavaScript and files
// native time under the function that called it, this sees the kernel, V8's own threads (the optimising
// compiler, the parallel garbage collector) and the builtins. bench/README.md, "The next day", has the how.
// Usage: pnpm bench:perf-summary <perf.data> [answers in the recorded window]
// (needs Linux `perf`; run the processes with --perf-basic-prof so that the JIT's code is named at all)
import { execFileSync } from 'node:child_process';

/** The kinds of work a sample is counted under, in the order they are printed. */
export const KINDS = [
  'kernel',
  'JIT-compiled JavaScript',
  'V8 builtins: megamorphic property access',
  'V8 builtins: property access (inline caches)',
  'V8 builtins: promises and async functions',
  'V8 builtins: the rest',
  'garbage collection',
  'optimising compiler',
  'libc',
  'V8 runtime, Node and the rest',
] as const;
export type Kind = (typeof KINDS)[number];

const GC = /Scaveng|ConcurrentMarking|MarkCompact|Marking|Sweep|Evacuat|Heap::|MemoryAllocator|IteratePointers|SemiSpace|RememberedSet/;
const COMPILER = /compiler::|maglev|Maglev|turboshaft|Compil/;
const PROMISES = /Promise|Async|Generator|Microtask/;

/** The kind of one `perf report` row (its shared object and symbol). */
export function kindOf(sharedObject: string, symbol: string): Kind {
  if (sharedObject === '[kernel.kallsyms]' || symbol.startsWith('[k]')) return 'kernel';
  if (sharedObject.startsWith('[JIT]') || sharedObject.startsWith('perf-')) return 'JIT-compiled JavaScript';
  if (GC.test(symbol)) return 'garbage collection';
  if (COMPILER.test(symbol)) return 'optimising compiler';
  if (sharedObject.startsWith('libc')) return 'libc';
  if (symbol.includes('Builtins_')) {
    if (/IC/.test(symbol) && symbol.includes('Megamorphic')) return 'V8 builtins: megamorphic property access';
    if (/IC(_|Trampoline|$)/.test(symbol)) return 'V8 builtins: property access (inline caches)';
    if (PROMISES.test(symbol)) return 'V8 builtins: promises and async functions';
    return 'V8 builtins: the rest';
  }
  return 'V8 runtime, Node and the rest';
}

/** One row of `perf report --stdio -t '\t' --sort comm,dso,sym`: overhead %, thread name, shared object, symbol. */
export interface PerfRow {
  percent: number;
  thread: string;
  sharedObject: string;
  symbol: string;
}

/** The rows and the recorded CPU time (µs, from cpu-clock's event count in ns) of `perf report` text. */
export function parseReport(text: string): { rows: PerfRow[]; totalUs: number } {
  const count = /^# Event count \(approx\.\): (\d+)/m.exec(text);
  const rows: PerfRow[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const [percent, thread, sharedObject, ...symbol] = line.split('\t');
    const value = Number.parseFloat(String(percent).trim().replace('%', ''));
    if (!Number.isFinite(value) || thread === undefined || sharedObject === undefined) continue;
    rows.push({ percent: value, thread: thread.trim(), sharedObject: sharedObject.trim(), symbol: symbol.join('\t').trim() });
  }
  return { rows, totalUs: count?.[1] === undefined ? Number.NaN : Number(count[1]) / 1000 };
}

/** CPU time (µs) per kind of work, and per thread name. */
export function summarise(rows: readonly PerfRow[], totalUs: number): { kinds: Map<Kind, number>; threads: Map<string, number> } {
  const kinds = new Map<Kind, number>(KINDS.map((kind) => [kind, 0]));
  const threads = new Map<string, number>();
  for (const row of rows) {
    const us = (row.percent / 100) * totalUs;
    const kind = kindOf(row.sharedObject, row.symbol);
    kinds.set(kind, (kinds.get(kind) ?? 0) + us);
    threads.set(row.thread, (threads.get(row.thread) ?? 0) + us);
  }
  return { kinds, threads };
}

if (import.meta.main) {
  const [file, answersText] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write('usage: pnpm bench:perf-summary <perf.data> [answers in the recorded window]\n');
    process.exit(2);
  }
  // Per answer when a positive count is given, else the whole recording in ms.
  const answers = answersText === undefined ? 0 : Number(answersText);
  const perAnswer = answers > 0;
  const text = execFileSync('perf', ['report', '-i', file, '--no-children', '--sort', 'comm,dso,sym', '--stdio', '-t', '\t'], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const { rows, totalUs } = parseReport(text);
  const { kinds, threads } = summarise(rows, totalUs);
  const unit = perAnswer ? 'µs per answer' : 'ms in all';
  const figure = (us: number) => (perAnswer ? us / answers : us / 1000).toFixed(1).padStart(8);
  process.stdout.write(`${unit} (recorded CPU ${(totalUs / 1e6).toFixed(2)} s)\n\nby kind of work:\n`);
  for (const [kind, us] of kinds) process.stdout.write(`${figure(us)}  ${kind}\n`);
  process.stdout.write('\nby thread:\n');
  for (const [thread, us] of [...threads].sort((a, b) => b[1] - a[1])) process.stdout.write(`${figure(us)}  ${thread}\n`);
}
