import { cpus, totalmem } from 'node:os';
import type { ScenarioResult } from './context.ts';
import { HARDENING_FACT, hardeningRows } from './hardening.ts';

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

  // Issue 27: CPU per answer (utime + stime per answer of the process, from /proc) against the floors of the
  // same run; req/s ratios stay as figures (the load generator shares the two cores).
  const cpu = (id: string, server: string) => results.find((r) => r.id === id)?.cpuUsPerRequest?.[server];
  // At a fixed rate only while the server kept up with it: a saturated one queues, and its figure says nothing of the pace.
  const cpuAtPace = (id: string, server: string) => {
    const result = results.find((r) => r.id === id);
    return result?.rate !== undefined && result.load.rps >= 0.97 * result.rate ? result.cpuUsPerRequest?.[server] : undefined;
  };
  const cpuRatio = (name: string, a: number | undefined, b: number | undefined, goal: number) => {
    const r = ratio(name, a, b);
    check(name, r === undefined ? '–' : `${fmt(r)}×`, `≤ ${goal}×`, r === undefined ? undefined : r <= goal);
  };
  // Risk against limit B measured by turns in the risk group (medians of BENCH_ROUNDS); the limits group's
  // own limit B when the risk group ran without it.
  const limitB = cpu('limit-b-in-turns', 'limit-b') ?? cpu('limit-b', 'limit-b');
  cpuRatio('risk CPU by-id / limit B', cpu('risk-by-id', 'risk'), limitB, 2.5);
  ratio('risk CPU by-id / limit B, at one fixed rate', cpuAtPace('risk-by-id-equal-rate', 'risk'), cpuAtPace('limit-b-equal-rate', 'limit-b'));
  // No target: by/id under the gateway's assertion (no revocation read). Under closed-loop load it has
  // cost more per answer than a direct call (bench/README.md).
  ratio('risk CPU by-id vouched / limit B', cpu('risk-vouched-by-id', 'risk'), limitB);
  ratio('risk CPU by-id vouched / direct', cpu('risk-vouched-by-id', 'risk'), cpu('risk-by-id', 'risk'));
  // No target: limit F, what a direct by/id must do before it answers (the bearer check with its revocation
  // read in Redis), against limit B (how much of the 2.5× the contract's own work takes) and risk against it
  // (what risk's validator, log line, metrics and headers add).
  ratio('limit F CPU by-id / limit B', cpu('limit-f-in-turns', 'limit-f'), limitB);
  ratio('risk CPU by-id / limit F', cpu('risk-by-id', 'risk'), cpu('limit-f-in-turns', 'limit-f'));
  ratio('limit F CPU by-id / limit B, at one fixed rate', cpuAtPace('limit-f-equal-rate', 'limit-f'), cpuAtPace('limit-b-equal-rate', 'limit-b'));
  ratio('risk CPU by-id / limit F, at one fixed rate', cpuAtPace('risk-by-id-equal-rate', 'risk'), cpuAtPace('limit-f-equal-rate', 'limit-f'));
  for (const lookup of ['by-id', 'city-district']) cpuRatio(`gateway CPU ${lookup} / limit C`, cpu(`gateway-${lookup}`, 'gateway'), cpu('limit-c', 'limit-c'), 1.5);
  // No target: the two at one fixed rate (BENCH_EQUAL_RATE), so that neither gets more answers per wake-up.
  ratio('gateway CPU by-id / limit C, at one fixed rate', cpuAtPace('gateway-by-id-equal-rate', 'gateway'), cpuAtPace('limit-c-equal-rate', 'limit-c'));
  // No target: limit D, the contract's per-request work and nothing else, against limit C (where the 1.5×
  // target stands against the contract's own floor) and the gateway against it (what the gateway adds).
  ratio('limit D CPU by-id / limit C, at one fixed rate', cpuAtPace('limit-d-equal-rate', 'limit-d'), cpuAtPace('limit-c-equal-rate', 'limit-c'));
  ratio('gateway CPU by-id / limit D, at one fixed rate', cpuAtPace('gateway-by-id-equal-rate', 'gateway'), cpuAtPace('limit-d-equal-rate', 'limit-d'));
  // No target: limit E (limit D with the gateway's checks) against limit C, by turns with it (where the 1.5×
  // target stands against the contract's checks without the gateway's pipeline), against limit D (what the
  // checks cost) and the gateway against it (what the pipeline costs).
  ratio('limit E CPU by-id / limit C', cpu('limit-e-by-id', 'limit-e'), cpu('limit-c', 'limit-c'));
  ratio('limit E CPU by-id / limit C, at one fixed rate', cpuAtPace('limit-e-equal-rate', 'limit-e'), cpuAtPace('limit-c-equal-rate', 'limit-c'));
  ratio('limit E CPU by-id / limit D', cpu('limit-e-by-id', 'limit-e'), cpu('limit-d-by-id', 'limit-d'));
  ratio('gateway CPU by-id / limit E', cpu('gateway-by-id', 'gateway'), cpu('limit-e-by-id', 'limit-e'));
  ratio('limit E CPU by-id / limit D, at one fixed rate', cpuAtPace('limit-e-equal-rate', 'limit-e'), cpuAtPace('limit-d-equal-rate', 'limit-d'));
  ratio('gateway CPU by-id / limit E, at one fixed rate', cpuAtPace('gateway-by-id-equal-rate', 'gateway'), cpuAtPace('limit-e-equal-rate', 'limit-e'));
  // BENCH_ONLY=pipeline: the same two by turns, medians of BENCH_ROUNDS.
  ratio('gateway CPU by-id / limit E, at one fixed rate, by turns', cpuAtPace('pipeline-gateway', 'gateway'), cpuAtPace('pipeline-limit-e', 'limit-e'));
  for (const lookup of ['by-id', 'city-district']) {
    ratio(`limit D CPU ${lookup} / limit C`, cpu(`limit-d-${lookup}`, 'limit-d'), cpu('limit-c', 'limit-c'));
    ratio(`gateway CPU ${lookup} / limit D`, cpu(`gateway-${lookup}`, 'gateway'), cpu(`limit-d-${lookup}`, 'limit-d'));
  }
  cpuRatio('tracing 1 in 10: gateway CPU / off', cpu('tracing-sampled', 'gateway-sampled'), cpu('tracing-off', 'gateway-untraced'), 1.25);
  cpuRatio('tracing every span: gateway CPU / off', cpu('tracing-on', 'gateway-traced'), cpu('tracing-off', 'gateway-untraced'), 1.6);
  // No target: the same ratios with the three driven at one fixed rate (BENCH_TRACING_RATE), where the
  // traced chain's lower closed-loop rate does not raise the traced gateways' CPU per answer by itself.
  ratio('tracing 1 in 10: gateway CPU / off, at one fixed rate', cpuAtPace('tracing-sampled-fixed', 'gateway-sampled'), cpuAtPace('tracing-off-fixed', 'gateway-untraced'));
  ratio('tracing every span: gateway CPU / off, at one fixed rate', cpuAtPace('tracing-on-fixed', 'gateway-traced'), cpuAtPace('tracing-off-fixed', 'gateway-untraced'));
  for (const lookup of ['by-id', 'city-district']) {
    ratio(`risk ${lookup} / limit B`, by(`risk-${lookup}`)?.rps, by('limit-b')?.rps);
    ratio(`gateway ${lookup} / risk direct`, by(`gateway-${lookup}`)?.rps, by(`risk-${lookup}`)?.rps);
  }
  // No target: how far the bare proxying floor (limit C) already is from risk direct, and the gateway from it.
  ratio('limit C / risk direct, by-id', by('limit-c')?.rps, by('risk-by-id')?.rps);
  ratio('gateway by-id / limit C', by('gateway-by-id')?.rps, by('limit-c')?.rps);
  // What one side of a latency pair adds over the other: the medians of the rounds' when measured in rounds
  // (measureFixedPairsInTurns), else the difference of the two.
  const addedOver = (directId: string, id: string): { p50: number; p99: number } | undefined => {
    const result = results.find((r) => r.id === id);
    const direct = by(directId);
    if (result === undefined || direct === undefined) return undefined;
    return result.addedMs ?? { p50: result.load.p50Ms - direct.p50Ms, p99: result.load.p99Ms - direct.p99Ms };
  };
  // No target: one more hop of bare proxying (limit C), the floor of what the gateway adds, and the gateway beyond it.
  // Limit E: the gateway's checks (signature, token, the admission round trip) without its pipeline.
  const limitC = addedOver('latency-direct-beside-limit-c', 'latency-limit-c');
  for (const [name, limit] of [
    ['limit C', limitC],
    ['limit E', addedOver('latency-direct-beside-limit-e', 'latency-limit-e')],
    // The control: the same target beside itself, the measure's own noise.
    ['direct beside direct', addedOver('latency-direct-beside-direct', 'latency-direct-again')],
  ] as const) {
    if (limit === undefined) continue;
    ratios[`${name} added p50 ms, by-id`] = limit.p50;
    ratios[`${name} added p99 ms, by-id`] = limit.p99;
  }
  for (const lookup of ['by-id', 'city-district']) {
    const added = addedOver(`latency-direct-${lookup}`, `latency-gateway-${lookup}`);
    if (added === undefined) continue;
    const { p50, p99 } = added;
    if (lookup === 'by-id' && limitC !== undefined) ratios['gateway added p50 ms beyond limit C, by-id'] = p50 - limitC.p50;
    ratios[`gateway added p50 ms, ${lookup}`] = p50;
    ratios[`gateway added p99 ms, ${lookup}`] = p99;
    check(`gateway added p50 at fixed rate, ${lookup}`, `${fmt(p50)} ms`, '≤ 0.6 ms', p50 <= 0.6);
    check(`gateway added p99 at fixed rate, ${lookup}`, `${fmt(p99)} ms`, '≤ 2.5 ms', p99 <= 2.5);
  }
  if (typeof facts.gatewayConnectionClose === 'number') {
    check('proxied answers with Connection: close', String(facts.gatewayConnectionClose), '0 of 50', facts.gatewayConnectionClose === 0);
  }

  // Issue 19: what the rate-limit check and tracing add per request (figures to watch).
  const added = (name: string, a: number | undefined, b: number | undefined) => {
    if (a !== undefined && b !== undefined) ratios[name] = a - b;
  };
  added('rate limit: Redis CPU µs added per claim', cpu('claim-rate-limited', 'redis'), cpu('claim-plain', 'redis'));
  added('rate limit: claim p50 ms added', by('claim-rate-limited')?.p50Ms, by('claim-plain')?.p50Ms);
  // Issue 28: the same claims on a local Redis Cluster, beside one Redis.
  added('rate limit on a cluster: Redis CPU µs added per claim', cpu('claim-rate-limited-cluster', 'redis'), cpu('claim-plain-cluster', 'redis'));
  added('rate limit on a cluster: claim p50 ms added', by('claim-rate-limited-cluster')?.p50Ms, by('claim-plain-cluster')?.p50Ms);
  for (const claim of ['plain', 'rate-limited']) {
    ratio(`claim ${claim}: claims/s on a cluster / on one Redis`, by(`claim-${claim}-cluster`)?.rps, by(`claim-${claim}`)?.rps);
    ratio(`claim ${claim}: Redis CPU per claim on a cluster / on one Redis`, cpu(`claim-${claim}-cluster`, 'redis'), cpu(`claim-${claim}`, 'redis'));
  }
  // Issue 21: the Redis-loss check every claim and token check starts with, as a share of a claim's Redis CPU.
  const lossCheckNs = typeof facts.redisLossCheckNs === 'number' ? facts.redisLossCheckNs : undefined;
  const claimRedisUs = cpu('claim-plain', 'redis');
  if (lossCheckNs !== undefined && claimRedisUs !== undefined) ratios['Redis-loss check: share of a claim\'s Redis CPU'] = lossCheckNs / 1000 / claimRedisUs;
  added('tracing exported: gateway CPU µs added per answer', cpu('tracing-on', 'gateway-traced'), cpu('tracing-off', 'gateway-untraced'));
  added('tracing exported: risk CPU µs added per answer', cpu('tracing-on', 'risk-traced'), cpu('tracing-off', 'risk'));
  added('tracing 1 in 10: gateway CPU µs added per answer', cpu('tracing-sampled', 'gateway-sampled'), cpu('tracing-off', 'gateway-untraced'));
  added('tracing 1 in 10: risk CPU µs added per answer', cpu('tracing-sampled', 'risk-traced'), cpu('tracing-off', 'risk'));

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
  ].join('\n');
}
