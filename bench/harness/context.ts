import type { BenchConfig } from './config.ts';
import { type LoadResult, type LoadTarget, closedLoop, fixedRate, fixedRates, quantile } from './load.ts';
import { type KernelCounts, type MemoryPhases, cpuMs, kernelCounts, kernelCountsOf } from './processes.ts';
import type { Session, Stack } from './stack.ts';
import { type RequestShape, type createSigner, plainHeaders } from './signer.ts';
import { vouchedHeaders } from './vouch.ts';

/** One measured scenario: how the load was driven and what it gave. */
export interface ScenarioResult {
  id: string;
  label: string;
  /** `closed`: as fast as `connections` clients go; `fixed`: at `rate` requests per second. */
  mode: 'closed' | 'fixed';
  connections?: number;
  rate?: number;
  load: LoadResult;
  /**
   * CPU time each server process spent per answer, µs: unlike req/s this hardly moves when other work
   * on the machine takes CPU away, so it is the figure to compare code changes by.
   */
  cpuUsPerRequest?: Record<string, number>;
  /** Each server process's wake-ups and system calls per answer (processes.ts `KernelCounts`), where /proc tells them. */
  kernelPerRequest?: Record<string, KernelCounts>;
  /**
   * The second of a pair measured side by side in rounds (`measureFixedPairsInTurns`): the medians of its
   * p50 and p99 minus its partner's, round by round, in milliseconds.
   */
  addedMs?: { p50: number; p99: number };
  /** The peak resident memory of the stack's risk and gateway while this scenario ran (its warm-up and every round included), MB. */
  rssPeakMb?: Record<string, number>;
}

/** What every scenario group gets: the configuration, the stack, the ADMIN session, and where results go. */
export interface RunContext {
  config: BenchConfig;
  logDir: string;
  stack: Stack | undefined;
  session: Session | undefined;
  signer: ReturnType<typeof createSigner>;
  results: ScenarioResult[];
  /** Figures that are not a load run (bcrypt compare time, memory peaks), by name. */
  facts: Record<string, number | boolean | string>;
  /** A progress line on stderr; stdout carries only the table. */
  progress(message: string): void;
  /** The run's memory sampler of risk and gateway, told which scenario runs (absent when nothing is sampled). */
  memory?: MemoryPhases;
  /** Hears each scenario's result as it is recorded: the run writes it out at once (a cut-off run keeps what it measured). */
  recorded?: (results: readonly ScenarioResult[]) => void;
}

/** Records results and tells the run (`recorded`). */
export function record(ctx: RunContext, ...results: ScenarioResult[]): void {
  ctx.results.push(...results);
  ctx.recorded?.(results);
}

/** Runs `measure` with the run's memory samples counted for the scenarios `ids`. */
async function measuring<T>(ctx: RunContext, ids: readonly string[], measure: () => Promise<T>): Promise<T> {
  const phase = ctx.memory?.during(ids);
  try {
    return await measure();
  } finally {
    phase?.end();
  }
}

/** The stack and session, which every group but `limits` needs. */
export function needStack(ctx: RunContext): { stack: Stack; session: Session } {
  if (ctx.stack === undefined || ctx.session === undefined) throw new Error('this scenario needs the stack');
  return { stack: ctx.stack, session: ctx.session };
}

/** A target whose requests go straight to a service: the same plain headers every time. */
export function directTarget(origin: string, shape: RequestShape): LoadTarget {
  const headers = plainHeaders(shape);
  return { origin, shape, headers: () => headers };
}

/**
 * A target at a service called as the gateway calls it (CONTRACT.md part 10): the forwarding headers and a
 * request id of its own under a `v3` internal assertion that vouches for the bearer token, made for each
 * request, so the service skips its own revocation read as it does behind the gateway.
 */
export function vouchedTarget(origin: string, shape: RequestShape, assertionKey: string): LoadTarget {
  const plain = plainHeaders(shape);
  const run = Date.now().toString(36);
  let n = 0;
  return {
    origin,
    shape,
    headers: () => {
      const facts = {
        method: shape.method,
        target: shape.target,
        forwardedFor: '127.0.0.1',
        forwardedProto: 'http',
        clientKeyId: 'bench',
        requestId: `bench-${run}-${(n += 1)}`,
        checkedAuthorization: shape.bearer === undefined ? undefined : `Bearer ${shape.bearer}`,
        // As the gateway says it, with its default UPSTREAM_TIMEOUT_MS (10 s, less its margin).
        deadlineAtMs: Date.now() + 9000,
      };
      return { ...plain, ...vouchedHeaders(assertionKey, facts) };
    },
  };
}

/** A target through the gateway: every request freshly signed. */
export async function signedTarget(ctx: RunContext, origin: string, shape: RequestShape): Promise<LoadTarget> {
  return { origin, shape, headers: await ctx.signer.for(shape) };
}

/** What `withCpu` measured: the load, and per answer each server's CPU and kernel counts. */
type Measured = Pick<ScenarioResult, 'load' | 'cpuUsPerRequest' | 'kernelPerRequest'>;

/** Runs `load` and says how much CPU each of `servers` spent per answer, and how many wake-ups and system calls. */
async function withCpu(servers: Readonly<Record<string, number | undefined>>, load: () => Promise<LoadResult>): Promise<Measured> {
  const entries = Object.entries(servers).filter((e): e is [string, number] => e[1] !== undefined);
  const read = () => Promise.all(entries.map(async ([, pid]) => [await cpuMs(pid), await kernelCounts(pid)] as const));
  const before = await read();
  const result = await load();
  const after = await read();
  if (entries.length === 0 || result.requests === 0) return { load: result };
  const cpuUsPerRequest: Record<string, number> = {};
  const kernelPerRequest: Record<string, KernelCounts> = {};
  entries.forEach(([name], i) => {
    const [[cpuBefore, countsBefore], [cpuAfter, countsAfter]] = [before[i] ?? [], after[i] ?? []];
    if (cpuBefore !== undefined && cpuAfter !== undefined) cpuUsPerRequest[name] = ((cpuAfter - cpuBefore) * 1000) / result.requests;
    if (countsBefore !== undefined && countsAfter !== undefined) kernelPerRequest[name] = kernelCountsOf((field) => (countsAfter[field] - countsBefore[field]) / result.requests);
  });
  return { load: result, cpuUsPerRequest, ...(Object.keys(kernelPerRequest).length > 0 ? { kernelPerRequest } : {}) };
}

/** Which server processes a scenario loads, by name, so their CPU per answer is recorded. */
export type Servers = Readonly<Record<string, number | undefined>>;

/** Warms up, then measures closed-loop load, and records it under `id`. */
export async function measureClosed(
  ctx: RunContext,
  id: string,
  label: string,
  target: LoadTarget,
  options: { connections?: number; servers?: Servers } = {},
): Promise<ScenarioResult> {
  const connections = options.connections ?? ctx.config.connections;
  ctx.progress(`${label}: ${connections} connections, ${ctx.config.warmupS} s warm-up + ${ctx.config.durationS} s`);
  const measured = await measuring(ctx, [id], async () => {
    if (ctx.config.warmupS > 0) await closedLoop(target, connections, ctx.config.warmupS);
    return await withCpu(options.servers ?? {}, () => closedLoop(target, connections, ctx.config.durationS));
  });
  const result: ScenarioResult = { id, label, mode: 'closed', connections, ...measured };
  record(ctx, result);
  return result;
}

/**
 * The warm-up before a measurement by turns: the whole BENCH_WARMUP_S in the first round (the JIT, the
 * pools); half a second at most in the later ones, which only bring the target's connections back.
 */
function warmupOf(ctx: RunContext, round: number): number {
  return round === 1 ? ctx.config.warmupS : Math.min(0.5, ctx.config.warmupS);
}

/**
 * Closed-loop scenarios whose CPU per answer is compared with one another (tracing off, on, 1 in 10):
 * measured by turns, `ctx.config.rounds` rounds of each (every measurement after its own warm-up), so
 * that a slow stretch of a shared machine falls on all of them, and recorded under their ids with the
 * median CPU per answer of each server and the load of the median round.
 */
export async function measureClosedInTurns(
  ctx: RunContext,
  scenarios: ReadonlyArray<{ id: string; label: string; target: LoadTarget; servers: Servers }>,
  /** Each at this fixed rate (req/s, open loop) instead of the closed loop: CPU per answer at one pace. */
  rate?: number,
): Promise<ScenarioResult[]> {
  const connections = ctx.config.connections;
  const { rounds } = ctx.config;
  const load = (target: LoadTarget, seconds: number) => (rate === undefined ? closedLoop(target, connections, seconds) : fixedRate(target, rate, seconds, connections));
  const measured = scenarios.map(() => [] as Measured[]);
  for (let round = 1; round <= rounds; round += 1) {
    for (const [i, scenario] of scenarios.entries()) {
      const pace = rate === undefined ? `${connections} connections` : `${rate} req/s`;
      const warmupS = warmupOf(ctx, round);
      ctx.progress(`${scenario.label} (round ${round} of ${rounds}): ${pace}, ${warmupS} s warm-up + ${ctx.config.durationS} s`);
      const run = await measuring(ctx, [scenario.id], async () => {
        if (warmupS > 0) await load(scenario.target, warmupS);
        return await withCpu(scenario.servers, () => load(scenario.target, ctx.config.durationS));
      });
      measured[i]?.push(run);
    }
  }
  const results = scenarios.map(({ id, label }, i): ScenarioResult => {
    const runs = measured[i] ?? [];
    const servers = Object.keys(runs[0]?.cpuUsPerRequest ?? {});
    const median = (of: (run: Measured) => number | undefined) => quantile(Float64Array.from(runs, (run) => of(run) ?? Number.NaN).sort(), 0.5);
    const cpuUsPerRequest = Object.fromEntries(servers.map((name) => [name, median((run) => run.cpuUsPerRequest?.[name])]));
    // Each count's own median, as the CPU's: the rounds' figures, not one round's.
    const counted = Object.keys(runs[0]?.kernelPerRequest ?? {});
    const kernelPerRequest = Object.fromEntries(counted.map((name) => [name, kernelCountsOf((field) => median((run) => run.kernelPerRequest?.[name]?.[field]))]));
    const byRate = [...runs].sort((a, b) => a.load.requests - b.load.requests);
    const mode = rate === undefined ? ({ mode: 'closed', connections } as const) : ({ mode: 'fixed', rate } as const);
    return { id, label: rounds > 1 ? `${label}, median of ${rounds}` : label, ...mode, load: (byRate[Math.floor((byRate.length - 1) / 2)] as (typeof runs)[number]).load, cpuUsPerRequest, ...(counted.length > 0 ? { kernelPerRequest } : {}) };
  });
  record(ctx, ...results);
  return results;
}

/** Warms up, then measures load at a fixed rate (with the CPU per answer of `servers`, when named), and records it under `id`. */
export async function measureFixed(ctx: RunContext, id: string, label: string, target: LoadTarget, rate = ctx.config.rate, servers: Servers = {}): Promise<ScenarioResult> {
  ctx.progress(`${label}: ${rate} req/s, ${ctx.config.warmupS} s warm-up + ${ctx.config.durationS} s`);
  const measured = await measuring(ctx, [id], async () => {
    if (ctx.config.warmupS > 0) await fixedRate(target, rate, ctx.config.warmupS, ctx.config.connections);
    return await withCpu(servers, () => fixedRate(target, rate, ctx.config.durationS, ctx.config.connections));
  });
  const result: ScenarioResult = { id, label, mode: 'fixed', rate, ...measured };
  record(ctx, result);
  return result;
}

/**
 * Two fixed-rate scenarios whose latencies are compared (direct vs gateway, real vs large station set):
 * run at the same time, `rate` each, their requests taking turns, so a stall of the machine falls on
 * both alike rather than on whichever ran at that moment.
 */
export async function measureFixedPair(
  ctx: RunContext,
  pair: readonly [PairSide, PairSide],
  rate = ctx.config.rate,
): Promise<ScenarioResult[]> {
  const [a, b] = pair;
  ctx.progress(`${a.label} / ${b.label}: ${rate} req/s each, side by side, ${ctx.config.warmupS} s warm-up + ${ctx.config.durationS} s`);
  const loads = await sideBySide(ctx, a, b, rate);
  const results = pair.map(({ id, label }, i): ScenarioResult => ({ id, label, mode: 'fixed', rate, load: loads[i] as LoadResult }));
  record(ctx, ...results);
  return results;
}

/** One side of a pair of fixed-rate scenarios whose latencies are compared. */
export interface PairSide {
  id: string;
  label: string;
  target: LoadTarget;
}

/** The two sides of a pair at `rate` each, their requests taking turns, after a warm-up: their two loads. */
async function sideBySide(ctx: RunContext, a: PairSide, b: PairSide, rate: number, warmupS = ctx.config.warmupS): Promise<LoadResult[]> {
  return await measuring(ctx, [a.id, b.id], async () => {
    if (warmupS > 0) await fixedRates([a.target, b.target], rate, warmupS, ctx.config.connections);
    return await fixedRates([a.target, b.target], rate, ctx.config.durationS, ctx.config.connections);
  });
}

/**
 * Pairs of fixed-rate scenarios whose latencies are compared (direct and through the gateway, direct and
 * through limit C), each pair side by side as `measureFixedPair` runs it, the pairs by turns,
 * `ctx.config.rounds` rounds (each after its own warm-up): what the second of a pair adds over the first
 * is taken round by round, where both met the same moment of the machine, and its median recorded as the
 * second's `addedMs`. Each side is recorded with the load of the round whose added p50 is that median.
 */
export async function measureFixedPairsInTurns(ctx: RunContext, pairs: ReadonlyArray<readonly [PairSide, PairSide]>, rate = ctx.config.rate): Promise<ScenarioResult[]> {
  const { rounds } = ctx.config;
  const measured = pairs.map(() => [] as Array<[LoadResult, LoadResult]>);
  for (let round = 1; round <= rounds; round += 1) {
    for (const [i, [a, b]] of pairs.entries()) {
      const warmupS = warmupOf(ctx, round);
      ctx.progress(`${a.label} / ${b.label} (round ${round} of ${rounds}): ${rate} req/s each, side by side, ${warmupS} s warm-up + ${ctx.config.durationS} s`);
      const [first, second] = await sideBySide(ctx, a, b, rate, warmupS);
      if (first === undefined || second === undefined) throw new Error('a pair without two results');
      ctx.progress(`  ${b.label} added p50 ${(second.p50Ms - first.p50Ms).toFixed(2)} ms, p99 ${(second.p99Ms - first.p99Ms).toFixed(2)} ms`);
      measured[i]?.push([first, second]);
    }
  }
  const median = (values: number[]) => quantile(Float64Array.from(values).sort(), 0.5);
  const suffix = rounds > 1 ? `, median of ${rounds}` : '';
  const results = pairs.flatMap(([a, b], i): ScenarioResult[] => {
    // The rounds in the order of their added p50; the median one (nearest rank, as `quantile`) gives the loads.
    const runs = [...(measured[i] ?? [])].sort(([x, y], [u, v]) => y.p50Ms - x.p50Ms - (v.p50Ms - u.p50Ms));
    const [first, second] = runs[Math.max(0, Math.ceil(runs.length / 2) - 1)] as [LoadResult, LoadResult];
    const addedMs = { p50: second.p50Ms - first.p50Ms, p99: median(runs.map(([x, y]) => y.p99Ms - x.p99Ms)) };
    return [
      { id: a.id, label: `${a.label}${suffix}`, mode: 'fixed', rate, load: first },
      { id: b.id, label: `${b.label}${suffix}`, mode: 'fixed', rate, load: second, addedMs },
    ];
  });
  record(ctx, ...results);
  return results;
}

/** The station every by-id scenario (and the limits) answers: 17130 Keçiören. */
export const STATION_ID = 17130;
/** A district served by stations, so the answer is a non-empty list. */
export const CITY_DISTRICT_BODY = JSON.stringify({ city: 'Ankara', district: 'Keçiören' });
