// `pnpm bench`: the speed budget of the hot paths (issue 10). Starts what it needs, runs every
// scenario group in one go (so ratios compare figures of the same machine state), prints one table
// with ratios and targets, and writes the same as JSON under bench/results/. bench/README.md explains.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Group, type BenchConfig, loadBenchConfig } from './config.ts';
import type { RunContext } from './context.ts';
import { hardeningScenarios } from './hardening.ts';
import { loginScenarios } from './login.ts';
import { rateLimitScenarios, tracingScenarios } from './observability.ts';
import { memorySampler } from './processes.ts';
import { type Report, evaluate, formatReport, machine } from './report.ts';
import { scaleScenarios } from './scale.ts';
import { gatewayScenarios, latencyScenarios, limitScenarios, pipelineScenarios, riskScenarios } from './scenarios.ts';
import { createSigner } from './signer.ts';
import { userSearchScenarios } from './users.ts';
import { adminSession, startStack } from './stack.ts';

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
  await mkdir(config.resultsDir, { recursive: true });
  const json = JSON.stringify({ runAt: new Date().toISOString(), config: { ...config, groups: [...config.groups], keySecret: undefined, adminPassword: undefined }, ...report }, null, 2);
  const file = join(config.resultsDir, `${stamp}.json`);
  await writeFile(file, json);
  await writeFile(join(config.resultsDir, 'latest.json'), json);
  return { report, file };
}

if (import.meta.main) {
  const { report, file } = await runBenchmark(loadBenchConfig());
  process.stdout.write(formatReport(report));
  process.stdout.write(`\nwritten: ${file}\n`);
}
