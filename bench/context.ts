import type { BenchConfig } from './config.ts';
import { type LoadResult, type LoadTarget, closedLoop, fixedRate, fixedRates } from './load.ts';
import { cpuMs } from './processes.ts';
import type { Session, Stack } from './stack.ts';
import { type RequestShape, type createSigner, plainHeaders } from './signer.ts';

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

/** A target through the gateway: every request freshly signed. */
export async function signedTarget(ctx: RunContext, origin: string, shape: RequestShape): Promise<LoadTarget> {
  return { origin, shape, headers: await ctx.signer.for(shape) };
}

/** Runs `load` and says how much CPU each of `servers` spent per answer. */
async function withCpu(servers: Readonly<Record<string, number | undefined>>, load: () => Promise<LoadResult>): Promise<{ load: LoadResult; cpuUsPerRequest?: Record<string, number> }> {
  const entries = Object.entries(servers).filter((e): e is [string, number] => e[1] !== undefined);
  const before = await Promise.all(entries.map(([, pid]) => cpuMs(pid)));
  const result = await load();
  const after = await Promise.all(entries.map(([, pid]) => cpuMs(pid)));
  if (entries.length === 0 || result.requests === 0) return { load: result };
  const cpuUsPerRequest: Record<string, number> = {};
  entries.forEach(([name], i) => {
    const [a, b] = [before[i], after[i]];
    if (a !== undefined && b !== undefined) cpuUsPerRequest[name] = ((b - a) * 1000) / result.requests;
  });
  return { load: result, cpuUsPerRequest };
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
  if (ctx.config.warmupS > 0) await closedLoop(target, connections, ctx.config.warmupS);
  const measured = await withCpu(options.servers ?? {}, () => closedLoop(target, connections, ctx.config.durationS));
  const result: ScenarioResult = { id, label, mode: 'closed', connections, ...measured };
  ctx.results.push(result);
  return result;
}

/** Warms up, then measures load at a fixed rate, and records it under `id`. */
export async function measureFixed(ctx: RunContext, id: string, label: string, target: LoadTarget, rate = ctx.config.rate): Promise<ScenarioResult> {
  ctx.progress(`${label}: ${rate} req/s, ${ctx.config.warmupS} s warm-up + ${ctx.config.durationS} s`);
  if (ctx.config.warmupS > 0) await fixedRate(target, rate, ctx.config.warmupS);
  const result: ScenarioResult = { id, label, mode: 'fixed', rate, load: await fixedRate(target, rate, ctx.config.durationS) };
  ctx.results.push(result);
  return result;
}

/**
 * Two fixed-rate scenarios whose latencies are compared (direct vs gateway, real vs large station set):
 * run at the same time, `rate` each, their requests taking turns, so a stall of the machine falls on
 * both alike rather than on whichever ran at that moment.
 */
export async function measureFixedPair(
  ctx: RunContext,
  pair: readonly [{ id: string; label: string; target: LoadTarget }, { id: string; label: string; target: LoadTarget }],
  rate = ctx.config.rate,
): Promise<ScenarioResult[]> {
  const [a, b] = pair;
  ctx.progress(`${a.label} / ${b.label}: ${rate} req/s each, side by side, ${ctx.config.warmupS} s warm-up + ${ctx.config.durationS} s`);
  if (ctx.config.warmupS > 0) await fixedRates([a.target, b.target], rate, ctx.config.warmupS);
  const loads = await fixedRates([a.target, b.target], rate, ctx.config.durationS);
  const results = pair.map(({ id, label }, i): ScenarioResult => ({ id, label, mode: 'fixed', rate, load: loads[i] as LoadResult }));
  ctx.results.push(...results);
  return results;
}

/** The station every by-id scenario (and the limits) answers: 17130 Keçiören. */
export const STATION_ID = 17130;
/** A district served by stations, so the answer is a non-empty list. */
export const CITY_DISTRICT_BODY = JSON.stringify({ city: 'Ankara', district: 'Keçiören' });
