// `pnpm bench`: the speed budget of the hot paths. Starts what it needs, measures limit B as the run's
// reference, runs the scenario groups in one go (so ratios compare figures of the same machine state),
// writes each scenario's figures as it finishes (console and bench/results/), then prints one table with
// ratios and targets; `--markdown` also writes bench/RESULTS.md. bench/README.md explains.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Group, type BenchConfig, ROOT, loadBenchConfig } from './harness/config.ts';
import type { RunContext } from './harness/context.ts';
import { hardeningScenarios } from './groups/hardening.ts';
import { loginScenarios } from './groups/login.ts';
import { rateLimitScenarios, tracingScenarios } from './groups/observability.ts';
import { memorySampler } from './harness/processes.ts';
import { type Report, evaluate, formatReport, machine } from './harness/report.ts';
import { scaleScenarios } from './groups/scale.ts';
import { gatewayScenarios } from './groups/gateway.ts';
import { latencyScenarios } from './groups/latency.ts';
import { limitScenarios, referenceScenario } from './groups/limits.ts';
import { pipelineScenarios } from './groups/pipeline.ts';
import { riskScenarios } from './groups/risk.ts';
import { resultsMarkdown } from './harness/markdown.ts';
import type { ScenarioResult } from './harness/context.ts';
import { createSigner } from './harness/signer.ts';
import { userSearchScenarios } from './groups/users.ts';
import { adminSession, startStack } from './harness/stack.ts';

const RUNNERS: Record<Group, (ctx: RunContext) => Promise<void>> = {
  limits: limitScenarios,
  risk: riskScenarios,
  gateway: gatewayScenarios,
  latency: latencyScenarios,
  login: loginScenarios,
  scale: scaleScenarios,
  ratelimit: rateLimitScenarios,
  tracing: tracingScenarios,
  users: userSearchScenarios,
  hardening: hardeningScenarios,
  pipeline: pipelineScenarios,
};

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** One finished scenario on the console: its rate, latencies and CPU per answer. */
function summaryLine(r: ScenarioResult): string {
  const load = r.mode === 'closed' ? `${r.connections} conn` : `${r.rate}/s`;
  const cpu = Object.entries(r.cpuUsPerRequest ?? {})
    .map(([name, us]) => `${name} ${us.toFixed(0)} µs`)
    .join(', ');
  const failures = r.load.non2xx + r.load.errors > 0 ? `, ${r.load.non2xx} non-2xx, ${r.load.errors} errors` : '';
  return `measured ${r.label} (${load}): ${r.load.rps.toFixed(0)} req/s, p50 ${r.load.p50Ms.toFixed(2)} ms, p99 ${r.load.p99Ms.toFixed(2)} ms${cpu === '' ? '' : `, ${cpu}`}${failures}\n`;
}

/**
 * Each scenario's peaks go into its result, and the scenario during which each process reached its run's
 * peak into the facts (`riskRssPeakDuring`, `gatewayRssPeakDuring`): a peak set while a process fell
 * behind a fixed pace is its backlog's, not the code's at that load.
 */
function recordMemoryByScenario(ctx: RunContext, memory: ReturnType<typeof memorySampler>): void {
  const byScenario = memory.peaksByScenario();
  for (const result of ctx.results) {
    const peaks = byScenario.get(result.id);
    if (peaks !== undefined) result.rssPeakMb = { ...peaks };
  }
  for (const [name, ids] of Object.entries(memory.peakSetBy())) {
    const labels = ids.map((id) => {
      const result = ctx.results.find((r) => r.id === id);
      if (result === undefined) return id;
      return `${result.label} (${result.mode === 'closed' ? `${result.connections} connections` : `${result.rate} req/s`})`;
    });
    ctx.facts[`${name}RssPeakDuring`] = labels.length === 0 ? 'between scenarios' : labels.join(' / ');
  }
}

/** Runs the configured groups and returns the report; the stack is always torn down. */
export async function runBenchmark(config: BenchConfig): Promise<{ report: Report; file: string }> {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const runId = `bench_${Date.now().toString(36)}`;
  const logDir = await mkdtemp(join(tmpdir(), `${runId}-`));
  // The limits run their own servers, and the hardening group times code in this process.
  const needsStack = [...config.groups].some((g) => g !== 'limits' && g !== 'hardening');
  const ctx: RunContext = {
    config,
    logDir,
    stack: undefined,
    session: undefined,
    signer: createSigner({ keyId: config.keyId, secret: config.keySecret }),
    results: [],
    facts: {},
    progress,
  };
  await mkdir(config.resultsDir, { recursive: true });
  const file = join(config.resultsDir, `${stamp}.json`);
  const configShown = { ...config, groups: [...config.groups], keySecret: undefined, adminPassword: undefined };
  // Each scenario's figures are on the console and in the results file as soon as it finishes: a run cut
  // off keeps what it measured (the file says `"complete": false` until the end).
  let writing = Promise.resolve();
  ctx.recorded = (results) => {
    for (const r of results) process.stdout.write(summaryLine(r));
    const partial = JSON.stringify({ runAt: new Date().toISOString(), complete: false, config: configShown, results: ctx.results, facts: ctx.facts }, null, 2);
    writing = writing.then(() => writeFile(file, partial)).catch(() => undefined);
  };
  let failed = true;
  try {
    if (needsStack) {
      progress(config.external === undefined ? 'starting identity, risk and gateway' : 'using the running stack');
      ctx.stack = await startStack(config, runId, logDir);
      ctx.session = await adminSession(config, ctx.stack);
    }
    const memory = memorySampler({ risk: ctx.stack?.riskPid, gateway: ctx.stack?.gatewayPid });
    ctx.memory = memory;
    const started = Date.now();
    // Other programs on the machine take CPU from every figure: say how busy it was around the run.
    ctx.facts.loadAverageBefore = loadavg()[0] ?? 0;
    // Limit B before any group: the machine's pace this run, against the quiet reference.
    await referenceScenario(ctx);
    for (const group of Object.keys(RUNNERS) as Group[]) {
      if (config.groups.has(group)) await RUNNERS[group](ctx);
    }
    memory.stop();
    const peaks = memory.peaks();
    if (peaks.risk !== undefined) ctx.facts.riskRssMb = peaks.risk;
    if (peaks.gateway !== undefined) ctx.facts.gatewayRssMb = peaks.gateway;
    recordMemoryByScenario(ctx, memory);
    ctx.facts.loadAverageAfter = loadavg()[0] ?? 0;
    ctx.facts.measuredSeconds = (Date.now() - started) / 1000;
    failed = false;
  } finally {
    progress('stopping');
    await ctx.stack?.close();
    if (failed || config.keepLogs || config.cpuProf.size > 0) progress(`logs kept in ${logDir}`);
    else await rm(logDir, { recursive: true, force: true });
  }
  const report: Report = { machine: machine(config.cores), results: ctx.results, facts: ctx.facts, ...evaluate(ctx.results, ctx.facts, config.cores) };
  await writing;
  const json = JSON.stringify({ runAt: new Date().toISOString(), complete: true, config: configShown, ...report }, null, 2);
  await writeFile(file, json);
  await writeFile(join(config.resultsDir, 'latest.json'), json);
  return { report, file };
}

if (import.meta.main) {
  const config = loadBenchConfig();
  const { report, file } = await runBenchmark(config);
  process.stdout.write(`\n${formatReport(report)}`);
  process.stdout.write(`\nwritten: ${file}\n`);
  if (process.argv.includes('--markdown')) {
    const markdown = join(ROOT, 'bench', 'RESULTS.md');
    await writeFile(markdown, resultsMarkdown(report, config, new Date()));
    process.stdout.write(`written: ${markdown}\n`);
  }
}
