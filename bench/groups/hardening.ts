// Group `hardening` of pnpm bench (issue 16, "No request may stop a process"): what the request checks
// cost, timed in the harness on the shipped code with the requests they see most: a station by id, a
// nearest query with three numeric parameters, and an unknown path.
// - A service's request checks as createApiApp sequences them (JSON body parser, NUL guard, the patched
//   validator, the strict numeric parameter check), with and without the numeric check.
// - The parts alone, where they can be: inSequence's dispatch through as many no-op middlewares as a
//   service request passes, the numeric check, the allow-list lookup.
// - The gateway's routing step in an Express app, the allow-list.
// Code as it was before a change is measured from a git worktree of that commit (`git worktree add`), with
// this same harness, not from copies kept here; bench/README.md has issue 16's before/after figures.
// Many short rounds, variants taking turns, timed by the wall clock (Node's CPU-time clocks tick in 4 ms
// steps here, too coarse for rounds this short). The fastest round is the code's own cost: other programs
// on a shared machine only ever add time, at random, and on these two vCPUs whole rounds run up to twice
// as slow while a neighbour is busy. The median is shown beside it for that noise.
import { join } from 'node:path';
import express, { type RequestHandler } from 'express';
import { inSequence, rejectMalformedText } from '@platform/service-kit';
import { openApiValidator, strictNumericParameters } from '@platform/service-kit/api-app';
import { loadApiDocument, operationTable, pathOf, upstreamRoutes } from '@platform/gateway/engine';
import { ROOT } from '../harness/config.ts';
import type { RunContext } from '../harness/context.ts';
import { type Serve, inProcessApp } from '../harness/in-process.ts';

const RISK_SPEC = join(ROOT, 'services/risk/openapi.yaml');
const IDENTITY_SPEC = join(ROOT, 'services/identity/openapi.yaml');

/** The requests measured, and the status the service's checks end each with (every variant must agree). */
const INPUTS = [
  { name: 'by-id', target: '/v1/weather-stations/by/id/17130', status: 200 },
  { name: 'nearest', target: '/v1/weather-stations/nearest?latitude=39.9727&longitude=32.8637&limit=5', status: 200 },
  { name: 'unknown', target: '/v1/weather-stations/no/such/path', status: 404 },
] as const;
type Input = (typeof INPUTS)[number];
/** A column of the table: one of the inputs, or `any` for what does not depend on the request. */
type Column = Input['name'] | 'any';
const COLUMNS: readonly Column[] = [...INPUTS.map((i) => i.name), 'any'];

/** Rounds per figure, and calls per round: 3–20 ms a round, so that many rounds find a quiet moment. */
const ROUNDS = 40;
const REQUEST_CALLS = 500;
const LOOKUP_CALLS = 50_000;

/** Middlewares a service request passes through inSequence: the base app's 5, then the API's 9 (createApiApp). */
const SERVICE_STEPS = 14;

/** The facts' prefixes: report.ts prints these as the hardening table, not among the other facts. */
export const HARDENING_FACT = 'hardening ns';
const FASTEST = `${HARDENING_FACT} fastest: `;
const MEDIAN = `${HARDENING_FACT} median: `;

type Timed = (input: Input) => number | Promise<number>;

const nowNs = (): number => Number(process.hrtime.bigint());

/** Times `calls` requests of `serve`, ns each; every one must end with `status`, which also keeps the work observed. */
async function timeServe(serve: Serve, target: string, status: number, calls: number): Promise<number> {
  let sum = 0;
  const t0 = nowNs();
  for (let i = 0; i < calls; i += 1) {
    const outcome = serve('GET', target);
    sum += typeof outcome === 'number' ? outcome : await outcome;
  }
  const ns = (nowNs() - t0) / calls;
  if (sum !== status * calls) throw new Error(`${target}: expected every answer to be ${status}, the statuses add up to ${sum}`);
  return ns;
}

/** Times `calls` synchronous calls, ns each; each must return `expected` (summed and checked, so none can be dropped). */
function timeCalls(calls: number, expected: number, call: () => number): number {
  let sum = 0;
  const t0 = nowNs();
  for (let i = 0; i < calls; i += 1) sum += call();
  const ns = (nowNs() - t0) / calls;
  if (sum !== expected * calls) throw new Error(`a timed call returned something else than expected (sum ${sum}, expected ${expected * calls})`);
  return ns;
}

/**
 * Runs every figure on each of `inputs`, taking turns, `ROUNDS` times, and records its fastest and median
 * round as facts, by row and column. Each round starts with the next figure, so none always runs first
 * after a change of input (its caches and branch history cold) or always after the same neighbour.
 */
async function measure(ctx: RunContext, figures: Readonly<Record<string, Timed>>, inputs: ReadonlyArray<Input & { column?: Column }>): Promise<void> {
  const samples = new Map<string, number[]>();
  const entries = Object.entries(figures);
  for (let round = 0; round < ROUNDS; round += 1) {
    const turn = [...entries.slice(round % entries.length), ...entries.slice(0, round % entries.length)];
    for (const input of inputs) {
      for (const [row, timed] of turn) {
        const key = `${row}, ${input.column ?? input.name}`;
        samples.set(key, [...(samples.get(key) ?? []), await timed(input)]);
      }
    }
  }
  for (const [key, values] of samples) {
    const sorted = [...values].sort((a, b) => a - b);
    ctx.facts[`${FASTEST}${key}`] = sorted[0] ?? Number.NaN;
    ctx.facts[`${MEDIAN}${key}`] = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  }
}

/** A service's request checks, as createApiApp sequences them, with the sequence and validator given. */
function serviceChecks(sequence: (handlers: readonly RequestHandler[]) => RequestHandler, validator: readonly RequestHandler[], numeric: boolean): Serve {
  return inProcessApp((app) => {
    app.use(sequence([express.json({ limit: '100kb' }), rejectMalformedText, ...validator, ...(numeric ? [strictNumericParameters(RISK_SPEC)] : [])]));
  });
}

async function warm(serve: Serve, statusOf: (input: Input) => number): Promise<void> {
  // The validator loads its document on the first requests (through promises); the JIT warms on the rest.
  for (let i = 0; i < 2000; i += 1) {
    for (const input of INPUTS) {
      const status = await serve('GET', input.target);
      if (i > 10 && status !== statusOf(input)) throw new Error(`${input.target} answered ${status}, not ${statusOf(input)}`);
    }
  }
}

/** The service side: the request checks with and without the numeric check, and the parts alone. */
async function serviceFigures(ctx: RunContext): Promise<void> {
  const validator = () => openApiValidator({ apiSpec: RISK_SPEC, validateResponses: false });
  const shipped = serviceChecks(inSequence, validator(), true);
  const variants: Record<string, Serve> = {
    'service checks, shipped': shipped,
    'service checks, without the numeric check': serviceChecks(inSequence, validator(), false),
  };
  for (const serve of Object.values(variants)) await warm(serve, (input) => input.status);
  // The shipped checks refuse what the validator alone lets through (issue 16, item 4): the variants differ.
  const refused = await shipped('GET', '/v1/weather-stations/nearest?latitude=Infinity&longitude=32.8637&limit=5');
  if (refused !== 400) throw new Error(`the shipped checks answered a non-finite latitude ${refused}, not 400`);
  ctx.progress(`hardening: a service's request checks, 2 variants × ${INPUTS.length} requests, ${ROUNDS} rounds of ${REQUEST_CALLS}`);
  await measure(ctx, Object.fromEntries(Object.entries(variants).map(([row, serve]) => [row, (input: Input) => timeServe(serve, input.target, input.status, REQUEST_CALLS)])), INPUTS);

  // inSequence's own dispatch, through as many no-op middlewares as a service request passes.
  let ended = 0;
  const end = () => {
    ended += 1;
  };
  const noOps = Array.from({ length: SERVICE_STEPS }, (): RequestHandler => (_req, _res, next) => next());
  const dispatch = inSequence(noOps);
  const dispatchOnce = (run: RequestHandler) => () => {
    const before = ended;
    void run({} as never, {} as never, end);
    return ended - before;
  };
  // The numeric check alone, as the validator leaves the request for it: the operation named, the URL as sent.
  const check = strictNumericParameters(RISK_SPEC);
  const checkOnce = (operationId: string, originalUrl: string) => {
    const req = { originalUrl, openapi: { schema: { operationId } } };
    let passed = 0;
    const next = (err?: unknown) => {
      passed = err === undefined ? 1 : 0;
    };
    return () => {
      passed = 0;
      check(req as never, {} as never, next);
      return passed;
    };
  };
  ctx.progress(`hardening: inSequence's dispatch and the numeric check alone, ${ROUNDS} rounds of ${LOOKUP_CALLS}`);
  await measure(
    ctx,
    {
      [`inSequence dispatch, ${SERVICE_STEPS} no-op steps`]: () => timeCalls(LOOKUP_CALLS, 1, dispatchOnce(dispatch)),
    },
    [{ ...INPUTS[0], column: 'any' }],
  );
  // An unknown path never reaches it (the validator refuses it first); an operation without numeric parameters does.
  const operationIds: Partial<Record<Input['name'], string>> = { 'by-id': 'getStationById', nearest: 'findNearestStations' };
  await measure(
    ctx,
    { 'numeric check alone': (input) => timeCalls(LOOKUP_CALLS / 5, 1, checkOnce(operationIds[input.name] ?? '', input.target)) },
    INPUTS.filter((input) => input.name in operationIds),
  );
  await measure(
    ctx,
    { 'numeric check alone, get-cities (no numeric parameter)': () => timeCalls(LOOKUP_CALLS, 1, checkOnce('getCities', '/v1/weather-stations/get-cities')) },
    [{ ...INPUTS[0], column: 'any' }],
  );
}

/** The gateway side: the allow-list lookup alone, and the routing step that asks it. */
async function gatewayFigures(ctx: RunContext): Promise<void> {
  const document = await loadApiDocument({ identityPath: IDENTITY_SPEC, riskPath: RISK_SPEC }, { maxSkewS: 300, safeTtlS: 600, unsafeTtlS: 86_400, bodyLimitBytes: 102_400 });
  const routes = Object.values(upstreamRoutes({ identity: 'http://127.0.0.1:1', risk: 'http://127.0.0.1:2' }));
  const table = operationTable(document, routes);
  // As api.router.ts asks it: the path without its query; 1 for an operation, 2 for another method, 3 for none.
  const lookup = (target: string) => {
    const match = table.match('GET', pathOf(target));
    return match === undefined ? 3 : match.operation === undefined ? 2 : 1;
  };
  const found: Record<Input['name'], number> = { 'by-id': 1, nearest: 1, unknown: 3 };
  // The dispatch of api.router.ts without the pipeline it picks: an operation goes on, anything else is a 404.
  const allowList: RequestHandler = (req, _res, next) => {
    next(lookup(req.originalUrl) === 1 ? undefined : Object.assign(new Error('no route'), { status: 404 }));
  };
  const routing = inProcessApp((app) => app.use(allowList));
  await warm(routing, (input) => input.status);
  ctx.progress(`hardening: the gateway's routing, ${ROUNDS} rounds of ${LOOKUP_CALLS} lookups and ${REQUEST_CALLS * 4} routed requests`);
  await measure(
    ctx,
    {
      'gateway allow-list lookup alone': (input) => timeCalls(LOOKUP_CALLS, found[input.name], () => lookup(input.target)),
      'gateway routing step, allow-list': (input) => timeServe(routing, input.target, input.status, REQUEST_CALLS * 4),
    },
    INPUTS,
  );
}

/** Group `hardening`: needs no stack, only this process. */
export async function hardeningScenarios(ctx: RunContext): Promise<void> {
  await serviceFigures(ctx);
  await gatewayFigures(ctx);
}

/** The hardening figures as table rows (a header, then "fastest (median)" ns by column); none when the group did not run. */
export function hardeningRows(facts: Readonly<Record<string, number | boolean | string>>): string[][] | undefined {
  const rows = new Map<string, Partial<Record<Column, string>>>();
  for (const [key, value] of Object.entries(facts)) {
    if (!key.startsWith(FASTEST) || typeof value !== 'number') continue;
    const at = key.lastIndexOf(', ');
    const row = key.slice(FASTEST.length, at);
    const column = key.slice(at + 2) as Column;
    const median = facts[`${MEDIAN}${key.slice(FASTEST.length)}`];
    rows.set(row, { ...rows.get(row), [column]: `${value.toFixed(0)} (${typeof median === 'number' ? median.toFixed(0) : '–'})` });
  }
  if (rows.size === 0) return undefined;
  return [['issue 16: ns per request or call, fastest round (median)', ...COLUMNS], ...[...rows].map(([row, cells]) => [row, ...COLUMNS.map((c) => cells[c] ?? '')])];
}
