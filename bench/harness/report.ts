import { cpus, totalmem } from 'node:os';
import type { ScenarioResult } from './context.ts';
import { HARDENING_FACT, hardeningRows } from '../groups/hardening.ts';

/** One target (issue 27's, and the login and scale ones of issue 10) with what this run reached; `met` is undefined when its scenarios did not run. */
export interface TargetCheck {
  name: string;
  reached: string;
  goal: string;
  met: boolean | undefined;
}

/** Everything a run prints and writes. */
export interface Report {
  machine: { cpu: string; cores: number; memoryGb: number; node: string; platform: string };
  results: ScenarioResult[];
  facts: Record<string, number | boolean | string>;
  ratios: Record<string, number>;
  targets: TargetCheck[];
}

/** The machine the figures belong to. */
export function machine(cores: number): Report['machine'] {
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

/** Whether a scenario's answers were all 2xx, give or take 1 in 1000 (its CPU per answer then is an answer's). */
function answered(result: ScenarioResult): boolean {
  return result.load.non2xx + result.load.errors <= result.load.requests / 1000;
}

const fmt = (n: number | undefined, digits = 2): string => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(digits));
const pct = (n: number | undefined): string => (n === undefined || Number.isNaN(n) ? '–' : `${(n * 100).toFixed(0)}%`);

/** The ratios and target checks of the results at hand (scenarios not run are left out or undefined). */
export function evaluate(results: readonly ScenarioResult[], facts: Report['facts'], cores: number): Pick<Report, 'ratios' | 'targets'> {
  const by = (id: string) => results.find((r) => r.id === id)?.load;
  const ratios: Record<string, number> = {};
  const targets: TargetCheck[] = [];
  const ratio = (name: string, a: number | undefined, b: number | undefined) => {
    if (a !== undefined && b !== undefined) ratios[name] = a / b;
    return a === undefined || b === undefined ? undefined : a / b;
  };
  const check = (name: string, reached: string, goal: string, met: boolean | undefined) => targets.push({ name, reached, goal, met });

  // CPU per answer (utime + stime of the process per answer, from /proc): unlike req/s it hardly moves when
  // other work takes CPU away. A figure counts only from a scenario whose answers were 2xx (a refusal costs
  // less than an answer, so a limit refusing its load looks cheap), and at a fixed rate only while the
  // process kept the pace (a saturated one queues, and its figure says nothing of the pace).
  const cpu = (id: string, server: string) => {
    const result = results.find((r) => r.id === id);
    return result !== undefined && answered(result) ? result.cpuUsPerRequest?.[server] : undefined;
  };
  const cpuAtPace = (id: string, server: string) => {
    const result = results.find((r) => r.id === id);
    return result?.rate !== undefined && result.load.rps >= 0.97 * result.rate && answered(result) ? result.cpuUsPerRequest?.[server] : undefined;
  };
  // No verdict from a run whose limit B took over twice its quiet reference (bench/quiet-reference.json).
  const slow = facts.machineSlow === true;
  const judged = (name: string, r: number | undefined, goal: number, unit = '×') =>
    check(name, r === undefined ? '–' : `${fmt(r)}${unit === '×' ? '×' : ` ${unit}`}`, `≤ ${goal}${unit === '×' ? '×' : ` ${unit}`}`, r === undefined || slow ? undefined : r <= goal);
  /** A judged pair: the ratio at one pace and in the closed loop, each against the same request's limit, both required. */
  const bothFigures = (name: string, [a, b]: readonly [string, string], [limitId, limitServer]: readonly [string, string], [pace, closed]: readonly [number, number]) => {
    judged(`${name}, at one pace`, ratio(`${name}, at one pace`, cpuAtPace(`${a}-pace`, b), cpuAtPace(`${limitId}-pace`, limitServer)), pace);
    judged(`${name}, closed loop`, ratio(`${name}, closed loop`, cpu(a, b), cpu(limitId, limitServer)), closed);
  };
  bothFigures('risk CPU by-id / limit B', ['risk-by-id', 'risk'], ['limit-b', 'limit-b'], [1.8, 3.0]);
  bothFigures('risk vouched CPU by-id / limit B', ['risk-vouched-by-id', 'risk'], ['limit-b', 'limit-b'], [1.5, 2.5]);
  bothFigures('gateway CPU by-id / limit C', ['gateway-by-id', 'gateway'], ['limit-c-by-id', 'limit-c'], [1.25, 1.15]);
  bothFigures('gateway CPU city-district / limit C', ['gateway-city-district', 'gateway'], ['limit-c-city-district', 'limit-c'], [1.3, 1.2]);
  // CONTRACT.md part 17: a by/id answered from the gateway's station cache, every check made.
  bothFigures('gateway cached hit CPU by-id / limit C', ['gateway-cached-by-id', 'gateway-cached'], ['limit-c-by-id', 'limit-c'], [0.7, 0.7]);
  // No targets: the floors beside them. Limit C′ forwards with nothing around it (node:http, undici), limit E′
  // does the contract's checks on C′, limit G those checks and an answer from memory with the gateway's output (a cached hit), limit G′
  // the same work with none of the packages' code on its path, limit H
  // all of risk's work for by/id (called directly and vouched) on a plain node:http server.
  for (const [suffix, figure] of [
    ['closed loop', cpu],
    ['at one pace', cpuAtPace],
  ] as const) {
    const id = (base: string) => (suffix === 'closed loop' ? base : `${base}-pace`);
    for (const lookup of ['by-id', 'city-district']) {
      ratio(`limit C′ CPU ${lookup} / limit C, ${suffix}`, figure(id(`limit-c-lean-${lookup}`), 'limit-c-lean'), figure(id(`limit-c-${lookup}`), 'limit-c'));
      ratio(`gateway CPU ${lookup} / limit C′, ${suffix}`, figure(id(`gateway-${lookup}`), 'gateway'), figure(id(`limit-c-lean-${lookup}`), 'limit-c-lean'));
    }
    for (const lookup of ['by-id', 'city-district']) {
      ratio(`limit E′ CPU ${lookup} / limit C′, ${suffix}`, figure(id(`limit-e-lean-${lookup}`), 'limit-e-lean'), figure(id(`limit-c-lean-${lookup}`), 'limit-c-lean'));
      ratio(`limit E′ CPU ${lookup} / limit C, ${suffix}`, figure(id(`limit-e-lean-${lookup}`), 'limit-e-lean'), figure(id(`limit-c-${lookup}`), 'limit-c'));
      ratio(`gateway CPU ${lookup} / limit E′, ${suffix}`, figure(id(`gateway-${lookup}`), 'gateway'), figure(id(`limit-e-lean-${lookup}`), 'limit-e-lean'));
      // E′ enveloped: E′ and the gateway's per-request output (envelope, quota headers, trace context).
      const enveloped = figure(id(`limit-e-lean-enveloped-${lookup}`), 'limit-e-lean-enveloped');
      ratio(`limit E′ enveloped CPU ${lookup} / limit C, ${suffix}`, enveloped, figure(id(`limit-c-${lookup}`), 'limit-c'));
      ratio(`limit E′ enveloped CPU ${lookup} / limit E′, ${suffix}`, enveloped, figure(id(`limit-e-lean-${lookup}`), 'limit-e-lean'));
      ratio(`gateway CPU ${lookup} / limit E′ enveloped, ${suffix}`, figure(id(`gateway-${lookup}`), 'gateway'), enveloped);
    }
    for (const lookup of ['by-id', 'city-district']) {
      // A cached hit's floor: limit G makes E′'s checks and answers from memory, with the gateway's per-request output.
      ratio(`limit G CPU ${lookup} / limit C, ${suffix}`, figure(id(`limit-g-${lookup}`), 'limit-g'), figure(id(`limit-c-${lookup}`), 'limit-c'));
      // Under every hit: its round trip alone (limit G bare), no checks and no output but the answer.
      ratio(`limit G bare CPU ${lookup} / limit C, ${suffix}`, figure(id(`limit-g-bare-${lookup}`), 'limit-g-bare'), figure(id(`limit-c-${lookup}`), 'limit-c'));
      ratio(`gateway cached hit CPU ${lookup} / limit G, ${suffix}`, figure(id(`gateway-cached-${lookup}`), 'gateway-cached'), figure(id(`limit-g-${lookup}`), 'limit-g'));
      // Limit G's work with none of the packages' code on its path: how far under limit G the same work can go.
      ratio(`limit G′ CPU ${lookup} / limit C, ${suffix}`, figure(id(`limit-g-lean-${lookup}`), 'limit-g-lean'), figure(id(`limit-c-${lookup}`), 'limit-c'));
      ratio(`gateway cached hit CPU ${lookup} / limit G′, ${suffix}`, figure(id(`gateway-cached-${lookup}`), 'gateway-cached'), figure(id(`limit-g-lean-${lookup}`), 'limit-g-lean'));
    }
    ratio(`gateway cached hit CPU city-district / limit C, ${suffix}`, figure(id('gateway-cached-city-district'), 'gateway-cached'), figure(id('limit-c-city-district'), 'limit-c'));
    // Risk's own work with nothing around it: limit H, called as risk is, direct and vouched.
    ratio(`risk CPU by-id / limit H, ${suffix}`, figure(id('risk-by-id'), 'risk'), figure(id('limit-h'), 'limit-h'));
    ratio(`risk vouched CPU by-id / limit H vouched, ${suffix}`, figure(id('risk-vouched-by-id'), 'risk'), figure(id('limit-h-vouched'), 'limit-h'));
    ratio(`limit H CPU by-id / limit B, ${suffix}`, figure(id('limit-h'), 'limit-h'), figure(id('limit-b'), 'limit-b'));
    ratio(`limit H vouched CPU by-id / limit B, ${suffix}`, figure(id('limit-h-vouched'), 'limit-h'), figure(id('limit-b'), 'limit-b'));
  }
  // BENCH_ONLY=pipeline: each checking limit and the gateway at one pace, by turns.
  ratio('pipeline: limit E CPU / limit E′', cpuAtPace('pipeline-limit-e', 'limit-e'), cpuAtPace('pipeline-limit-e-lean', 'limit-e-lean'));
  ratio('pipeline: limit D CPU / limit E′', cpuAtPace('pipeline-limit-d', 'limit-d'), cpuAtPace('pipeline-limit-e-lean', 'limit-e-lean'));
  ratio('pipeline: gateway CPU / limit E′', cpuAtPace('pipeline-gateway', 'gateway'), cpuAtPace('pipeline-limit-e-lean', 'limit-e-lean'));
  for (const [name, on, server, goal] of [
    ['tracing 1 in 10: gateway CPU / off', 'tracing-sampled', 'gateway-sampled', 1.15],
    ['tracing every span: gateway CPU / off', 'tracing-on', 'gateway-traced', 1.5],
  ] as const) {
    judged(`${name}, at one pace`, ratio(`${name}, at one pace`, cpuAtPace(`${on}-fixed`, server), cpuAtPace('tracing-off-fixed', 'gateway-untraced')), goal);
    judged(`${name}, closed loop`, ratio(`${name}, closed loop`, cpu(on, server), cpu('tracing-off', 'gateway-untraced')), goal);
  }
  // No targets: the same tracing beside them on limit E′ (E′ traced, the gateway's OpenTelemetry setup and
  // spans with nothing else around E′'s checks), each way against the same limit with tracing off.
  for (const [name, on, server] of [
    ['tracing 1 in 10: limit E′ traced CPU / off', 'tracing-sampled-limit', 'limit-e-lean-sampled'],
    ['tracing every span: limit E′ traced CPU / off', 'tracing-on-limit', 'limit-e-lean-traced'],
  ] as const) {
    ratio(`${name}, at one pace`, cpuAtPace(`${on}-fixed`, server), cpuAtPace('tracing-off-limit-fixed', 'limit-e-lean-untraced'));
    ratio(`${name}, closed loop`, cpu(on, server), cpu('tracing-off-limit', 'limit-e-lean-untraced'));
  }
  // What one side of a latency pair adds over the other: the medians of the rounds' when measured in rounds
  // (measureFixedPairsInTurns), else the difference of the two.
  const addedOver = (directId: string, id: string): { p50: number; p99: number } | undefined => {
    const result = results.find((r) => r.id === id);
    const direct = by(directId);
    if (result === undefined || direct === undefined) return undefined;
    return result.addedMs ?? { p50: result.load.p50Ms - direct.p50Ms, p99: result.load.p99Ms - direct.p99Ms };
  };
  // The control: the same target beside itself, the measure's own noise, which every other pair carries too.
  const control = addedOver('latency-direct-beside-direct', 'latency-direct-again');
  for (const [name, limit] of [
    ['limit C′', addedOver('latency-direct-beside-limit-c-lean', 'latency-limit-c-lean')],
    ['limit E′', addedOver('latency-direct-beside-limit-e-lean', 'latency-limit-e-lean')],
    ['limit G', addedOver('latency-direct-beside-limit-g', 'latency-limit-g')],
    ['limit G′', addedOver('latency-direct-beside-limit-g-lean', 'latency-limit-g-lean')],
    ['direct beside direct', control],
  ] as const) {
    if (limit === undefined) continue;
    ratios[`${name} added p50 ms, by-id`] = limit.p50;
    ratios[`${name} added p99 ms, by-id`] = limit.p99;
    // The floors beside the gateway's targets, on the same footing: beyond the control.
    if (control !== undefined && (name === 'limit E′' || name === 'limit G' || name === 'limit G′')) ratios[`${name} added p50 ms beyond the control, by-id`] = limit.p50 - control.p50;
  }
  for (const lookup of ['by-id', 'city-district']) {
    const added = addedOver(`latency-direct-${lookup}`, `latency-gateway-${lookup}`);
    if (added === undefined) continue;
    ratios[`gateway added p50 ms, ${lookup}`] = added.p50;
    ratios[`gateway added p99 ms, ${lookup}`] = added.p99;
    if (lookup !== 'by-id' || control === undefined) continue;
    const p50 = added.p50 - control.p50;
    const p99 = added.p99 - control.p99;
    ratios['gateway added p50 ms beyond the control, by-id'] = p50;
    ratios['gateway added p99 ms beyond the control, by-id'] = p99;
    judged('gateway added p50 at 500 req/s beyond the control, by-id', p50, 0.6, 'ms');
    judged('gateway added p99 at 500 req/s beyond the control, by-id', p99, 2.5, 'ms');
  }
  const cachedHit = addedOver('latency-direct-beside-gateway-cached', 'latency-gateway-cached-by-id');
  if (cachedHit !== undefined && control !== undefined) {
    ratios['gateway cached hit added p50 ms beyond the control, by-id'] = cachedHit.p50 - control.p50;
    judged('gateway cached hit added p50 at 500 req/s beyond the control, by-id', cachedHit.p50 - control.p50, 0.3, 'ms');
  }
  if (typeof facts.gatewayConnectionClose === 'number') {
    check('proxied answers with Connection: close', String(facts.gatewayConnectionClose), '0 of 50', facts.gatewayConnectionClose === 0);
  }

  // Issue 19: what the rate-limit check and tracing add per request (figures to watch). A claim refused by
  // the rate limit is a claim's work too: those figures count every outcome.
  const claimCpu = (id: string, server: string) => results.find((r) => r.id === id)?.cpuUsPerRequest?.[server];
  const added = (name: string, a: number | undefined, b: number | undefined) => {
    if (a !== undefined && b !== undefined) ratios[name] = a - b;
  };
  added('rate limit: Redis CPU µs added per claim', claimCpu('claim-rate-limited', 'redis'), claimCpu('claim-plain', 'redis'));
  added('rate limit: claim p50 ms added', by('claim-rate-limited')?.p50Ms, by('claim-plain')?.p50Ms);
  // Issue 28: the same claims on a local Redis Cluster, beside one Redis.
  added('rate limit on a cluster: Redis CPU µs added per claim', claimCpu('claim-rate-limited-cluster', 'redis'), claimCpu('claim-plain-cluster', 'redis'));
  added('rate limit on a cluster: claim p50 ms added', by('claim-rate-limited-cluster')?.p50Ms, by('claim-plain-cluster')?.p50Ms);
  for (const claim of ['plain', 'rate-limited']) {
    ratio(`claim ${claim}: claims/s on a cluster / on one Redis`, by(`claim-${claim}-cluster`)?.rps, by(`claim-${claim}`)?.rps);
    ratio(`claim ${claim}: Redis CPU per claim on a cluster / on one Redis`, claimCpu(`claim-${claim}-cluster`, 'redis'), claimCpu(`claim-${claim}`, 'redis'));
  }
  // Issue 21: the Redis-loss check every claim and token check starts with, as a share of a claim's Redis CPU.
  const lossCheckNs = typeof facts.redisLossCheckNs === 'number' ? facts.redisLossCheckNs : undefined;
  const claimRedisUs = claimCpu('claim-plain', 'redis');
  if (lossCheckNs !== undefined && claimRedisUs !== undefined) ratios['Redis-loss check: share of a claim\'s Redis CPU'] = lossCheckNs / 1000 / claimRedisUs;
  added('tracing exported: gateway CPU µs added per answer', cpu('tracing-on', 'gateway-traced'), cpu('tracing-off', 'gateway-untraced'));
  added('tracing exported: risk CPU µs added per answer', cpu('tracing-on', 'risk-traced'), cpu('tracing-off', 'risk'));
  added('tracing 1 in 10: gateway CPU µs added per answer', cpu('tracing-sampled', 'gateway-sampled'), cpu('tracing-off', 'gateway-untraced'));
  added('tracing 1 in 10: risk CPU µs added per answer', cpu('tracing-sampled', 'risk-traced'), cpu('tracing-off', 'risk'));
  added('tracing exported: limit E′ traced CPU µs added per answer', cpu('tracing-on-limit', 'limit-e-lean-traced'), cpu('tracing-off-limit', 'limit-e-lean-untraced'));
  added('tracing 1 in 10: limit E′ traced CPU µs added per answer', cpu('tracing-sampled-limit', 'limit-e-lean-sampled'), cpu('tracing-off-limit', 'limit-e-lean-untraced'));

  const compareMs = typeof facts.bcryptCompareMs === 'number' ? facts.bcryptCompareMs : undefined;
  const logins = by('login-concurrent');
  if (compareMs !== undefined && logins !== undefined) {
    const ceiling = cores / (compareMs / 1000);
    ratios['login throughput / (cores ÷ compare)'] = logins.rps / ceiling;
    check('login throughput', `${fmt(logins.rps, 1)}/s = ${pct(logins.rps / ceiling)} of ${fmt(ceiling, 1)}/s`, '≥ 80% of cores ÷ compare', logins.rps >= 0.8 * ceiling);
  }
  const unloaded = by('login-unloaded');
  if (compareMs !== undefined && unloaded !== undefined) {
    ratios['unloaded login p99 / compare'] = unloaded.p99Ms / compareMs;
    check('unloaded login p99', `${fmt(unloaded.p99Ms, 1)} ms = ${fmt(unloaded.p99Ms / compareMs)}× compare (${fmt(compareMs, 1)} ms)`, '≤ 1.25× compare', unloaded.p99Ms <= 1.25 * compareMs);
  }
  const r = ratio('accounts p99 during logins / alone', by('accounts-during-logins')?.p99Ms, by('accounts-unloaded')?.p99Ms);
  check('accounts p99 while logins run', r === undefined ? '–' : `${fmt(r)}×`, '≤ 2× alone', r === undefined ? undefined : r <= 2);

  for (const lookup of ['nearest', 'city-district']) {
    const s = ratio(`scaled ${lookup} p99 / real`, by(`scale-${lookup}-nx`)?.p99Ms, by(`scale-${lookup}-1x`)?.p99Ms);
    check(`${lookup} p99, large set vs real`, s === undefined ? '–' : `${fmt(s)}×`, '≤ 1.2×', s === undefined ? undefined : s <= 1.2);
  }
  for (const [name, fact, limit] of [
    ['risk', 'riskRssMb', 150],
    ['gateway', 'gatewayRssMb', 160],
  ] as const) {
    const mb = facts[fact];
    check(`${name} resident memory under load`, typeof mb === 'number' ? `${fmt(mb, 0)} MB` : '–', `≤ ${limit} MB`, typeof mb === 'number' ? mb <= limit : undefined);
  }
  return { ratios, targets };
}

/** The head of the kernel counts' table (`kernelRows`). */
export const KERNEL_HEAD = ['scenario', 'load', 'process', 'wake-ups', 'preempted', 'reads', 'writes'] as const;

/**
 * Per answer, each measured process's wake-ups of its event loop, times put off the CPU, and read and write
 * system calls (processes.ts `KernelCounts`): the costs a CPU profile cannot name, one row per process.
 */
export function kernelRows(results: readonly ScenarioResult[]): string[][] {
  return results.flatMap((r) =>
    Object.entries(r.kernelPerRequest ?? {}).map(([name, k]) => [
      r.label,
      r.mode === 'closed' ? `${r.connections} conn` : `${r.rate}/s`,
      name,
      fmt(k.wakeUps),
      fmt(k.preempted),
      fmt(k.reads),
      fmt(k.writes),
    ]),
  );
}

function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  const line = (r: string[]) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join('  ');
  return [line(rows[0] ?? []), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

/** The table of scenarios, the ratios and the targets, as printed at the end of a run. */
export function formatReport(report: Report): string {
  const m = report.machine;
  const scenarios = table([
    ['scenario', 'load', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'server CPU µs/req'],
    ...report.results.map((r) => [
      r.label,
      r.mode === 'closed' ? `${r.connections} conn` : `${r.rate}/s`,
      fmt(r.load.rps, 0),
      fmt(r.load.p50Ms),
      fmt(r.load.p99Ms),
      String(r.load.non2xx),
      String(r.load.errors),
      Object.entries(r.cpuUsPerRequest ?? {})
        .map(([name, us]) => `${name} ${us.toFixed(0)}`)
        .join(', '),
    ]),
  ]);
  // The hardening group's figures are a table of their own.
  const facts = Object.entries(report.facts)
    .filter(([k]) => !k.startsWith(HARDENING_FACT))
    .map(([k, v]) => `  ${k}: ${typeof v === 'number' ? fmt(v, 1) : String(v)}`);
  const hardening = hardeningRows(report.facts);
  const kernel = kernelRows(report.results);
  const ratios = Object.entries(report.ratios).map(([k, v]) => `  ${k}: ${k.includes(' µs') ? fmt(v, 1) : k.includes(' ms') ? fmt(v) : pct(v)}`);
  const targets = table([
    ['target', 'reached', 'goal', 'met'],
    ...report.targets.map((t) => [t.name, t.reached, t.goal, t.met === undefined ? 'not run' : t.met ? 'yes' : 'NO']),
  ]);
  return [
    `machine: ${m.cpu}, ${m.cores} cores, ${m.memoryGb} GB, Node ${m.node}, ${m.platform}`,
    '',
    scenarios,
    '',
    'facts:',
    ...facts,
    '',
    'ratios:',
    ...ratios,
    '',
    targets,
    '',
    ...(hardening === undefined ? [] : [table(hardening), '']),
    ...(kernel.length === 0 ? [] : ['per answer, from /proc (wake-ups and preemptions of the main thread, system calls of all threads):', table([[...KERNEL_HEAD], ...kernel]), '']),
  ].join('\n');
}
