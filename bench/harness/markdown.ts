// bench/RESULTS.md, as `pnpm bench --markdown` writes it: today's status of every target, the figures it
// was judged from and the ratios beside them, from one run. bench/README.md points here.
import type { BenchConfig } from './config.ts';
import { KERNEL_HEAD, type Report, kernelRows } from './report.ts';

const cell = (text: string) => text.replaceAll('|', '\\|');
const fmt = (n: number, digits = 2) => (Number.isNaN(n) ? '–' : n.toFixed(digits));

function table(head: readonly string[], rows: ReadonlyArray<readonly string[]>): string[] {
  return [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)];
}

/** The Markdown of one run's report. */
export function resultsMarkdown(report: Report, config: BenchConfig, at: Date): string {
  const { machine: m, facts } = report;
  const limitB = typeof facts.limitBReferenceUs === 'number' ? facts.limitBReferenceUs : undefined;
  const quiet = typeof facts.limitBQuietReferenceUs === 'number' ? facts.limitBQuietReferenceUs : undefined;
  const slow = facts.machineSlow === true;
  const load = [facts.loadAverageBefore, facts.loadAverageAfter].map((v) => (typeof v === 'number' ? v.toFixed(1) : '?')).join(' → ');
  const met = (v: boolean | undefined) => (v === undefined ? (slow ? 'no verdict (machine slow)' : 'not run') : v ? 'yes' : '**no**');
  const ratioValue = (name: string, v: number) => (name.includes(' ms') ? `${fmt(v)} ms` : name.includes(' µs') ? `${fmt(v, 1)} µs` : `${fmt(v)}×`);
  const kernel = kernelRows(report.results);
  return [
    '# Bench results',
    '',
    `Written by \`pnpm bench --markdown\` (${at.toISOString().slice(0, 10)}), groups ${[...config.groups].join(', ')}; ` +
      `${config.rounds} rounds by turns of ${config.warmupS} s warm-up + ${config.durationS} s each; one pace ${config.equalRate} req/s, ${config.connections} connections in the closed loop.`,
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGb} GB, Node ${m.node}; load average ${load}.`,
    '',
    limitB === undefined || quiet === undefined
      ? 'Limit B was not measured: no verdicts.'
      : `Limit B, the run's reference: ${fmt(limitB, 1)} µs per answer against a quiet reference of ${fmt(quiet, 1)} µs (bench/quiet-reference.json): ${slow ? '**machine slow, no verdict on any target**' : 'not slow, the verdicts below stand'}.`,
    '',
    '## Targets',
    '',
    ...table(
      ['target', 'goal', 'reached', 'met'],
      report.targets.map((t) => [t.name, t.goal, t.reached, met(t.met)]),
    ),
    '',
    '## Figures',
    '',
    'Each CPU figure is the process\'s CPU time per answer; a scenario measured by turns shows the median of its rounds.',
    '',
    ...table(
      ['scenario', 'load', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx + errors', 'CPU µs per answer'],
      report.results.map((r) => [
        r.label,
        r.mode === 'closed' ? `${r.connections} conn` : `${r.rate}/s`,
        fmt(r.load.rps, 0),
        fmt(r.load.p50Ms),
        fmt(r.load.p99Ms),
        String(r.load.non2xx + r.load.errors),
        Object.entries(r.cpuUsPerRequest ?? {})
          .map(([name, us]) => `${name} ${us.toFixed(0)}`)
          .join(', '),
      ]),
    ),
    '',
    ...(kernel.length === 0
      ? []
      : [
          '## Wake-ups and system calls per answer',
          '',
          'What the kernel counted of each process per answer (/proc, medians of the rounds): wake-ups and preemptions of its main thread (the event loop), read and write system calls of all its threads. A CPU profile cannot name these costs; at one pace each answer pays its own, in the closed loop the answers of one turn share them.',
          '',
          ...table(KERNEL_HEAD, kernel),
          '',
        ]),
    '## Ratios without targets',
    '',
    ...Object.entries(report.ratios)
      .filter(([name]) => !report.targets.some((t) => t.name === name))
      .map(([name, v]) => `- ${name}: ${ratioValue(name, v)}`),
    '',
  ].join('\n');
}
