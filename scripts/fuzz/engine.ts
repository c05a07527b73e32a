// The schema-driven fuzzer (issue 16): for every operation of the gateway's merged API document, seeded
// valid and mutated requests, each signed with a fresh nonce and idempotency key and sent through the
// real stack; every answer is checked against the document: no 5xx, a status the operation lists, and
// a body that matches the schema documented for that status, and an answer at all, in time. Used by
// `pnpm fuzz` (scripts/fuzz.ts) and by the short run in `pnpm test` (test/reliability/schema-fuzz.test.ts).
import { randomUUID } from 'node:crypto';
import { Agent } from 'node:http';
import fc from 'fast-check';
import { createSigner, signRequest } from '@platform/client';
import type { OpenApiDocument } from '@platform/service-kit';
import { answerChecker } from './answer-check.ts';
import type { Caller, FuzzProblem, FuzzRequest } from './findings.ts';
import { exchange } from './exchange.ts';
import { type Operation, type Schema, hostileValue, jsonBytes, mutated, NUMBER_LOOKALIKES, operationsOfDocument, pathValue, valid } from './schema-arbitrary.ts';

type Json = Record<string, unknown>;

export type { Caller, FuzzProblem, FuzzRequest } from './findings.ts';

/** What a run did and found. */
export interface FuzzReport {
  seed: number;
  rounds: number;
  requests: number;
  byStatus: Record<string, number>;
  counts: Record<FuzzProblem['kind'], number>;
  /** The first problems found, in order, for replay and the failure message. */
  problems: FuzzProblem[];
  /**
   * Why the run ended before its time, when it did: the gateway no longer answers, or a callback or the
   * fuzzer itself failed. What was found until then is kept in the report.
   */
  stopped?: string;
}

export interface FuzzOptions {
  gatewayUrl: string;
  /** The merged document, as the gateway serves it at /openapi.json. */
  document: Json;
  clientKey: { keyId: string; secret: string };
  /** Fresh access tokens of an ADMIN and of a plain user, asked for before every batch. */
  tokens: () => Promise<{ admin: string; user: string }>;
  seed: number;
  /** Run rounds (one batch per operation each) until this much time has passed. */
  durationMs: number;
  /** Requests per operation per round. */
  batch?: number;
  /**
   * How long one request may take, from connecting to the answer's last byte, before it counts as a
   * transport failure (default 20 s: past the gateway's own deadline, REQUEST_DEADLINE_MS 15 s, so an
   * answer the gateway bounds arrives first and only a stall it failed to bound is reported as one).
   */
  requestTimeoutMs?: number;
  /** A check of the test's own after each answer (e.g. nothing changed after a refusal); a problem text, or undefined. */
  check?: (request: FuzzRequest, status: number) => Promise<string | undefined>;
  /** Called after each round, e.g. to print progress. */
  onRound?: (report: FuzzReport) => void;
}

/** At most this many problems are kept; the counts go on. */
const KEPT_PROBLEMS = 50;

/** The default of `requestTimeoutMs`. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 20_000;

/** `seed`, `round` and `index` mixed into one 31-bit seed, so every batch of a run can be replayed alone. */
function batchSeed(seed: number, round: number, index: number): number {
  let h = (seed ^ 0x9e3779b9) >>> 0;
  for (const n of [round, index]) {
    h = Math.imul(h ^ n, 0x85ebca6b) >>> 0;
    h = (h ^ (h >>> 13)) >>> 0;
  }
  return h & 0x7fffffff;
}

function requestsFor(doc: Json, op: Operation): fc.Arbitrary<Omit<FuzzRequest, 'operation'>> {
  const path = fc
    .record(Object.fromEntries(Object.entries(op.pathParams).map(([name, schema]) => [name, pathValue(doc, schema)])))
    .map((values) => op.path.replace(/\{(\w+)\}/g, (_m, name: string) => values[name] ?? ''));
  const queryValue = (schema: Schema) =>
    // Capped so the request line stays under Node's 16 kB header limit (a 431 is tested on its own).
    fc.oneof(
      { weight: 8, arbitrary: valid(doc, schema).map(String) },
      { weight: 1, arbitrary: fc.constantFrom(...NUMBER_LOOKALIKES) },
      { weight: 1, arbitrary: hostileValue.map((v) => (typeof v === 'string' ? v : jsonBytes(v).toString()).slice(0, 1000)) },
    );
  const queryEntries = fc.tuple(
    ...Object.entries(op.queryParams).map(([name, { schema, required }]) =>
      (required ? queryValue(schema).map((v): string | undefined => v) : fc.option(queryValue(schema), { nil: undefined })).map((v) => [name, v] as const),
    ),
    // Now and then a parameter nobody documents, or one given twice or as an array.
    fc.oneof(
      { weight: 9, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constantFrom<[string, string]>(['unknown', '1'], ['limit', '1'], ['__proto__[x]', '1'], ['latitude[]', '1']) },
    ),
  );
  const query = queryEntries.map((entries) => {
    const params = new URLSearchParams();
    for (const entry of entries) if (entry?.[1] !== undefined) params.append(entry[0], entry[1]);
    const text = params.toString();
    return text === '' ? '' : `?${text}`;
  });
  const body =
    op.body === undefined
      ? fc.constant(undefined)
      : fc.oneof({ weight: 2, arbitrary: valid(doc, op.body) }, { weight: 3, arbitrary: mutated(doc, op.body) }).map((value) => jsonBytes(value));
  // Mostly a caller the operation serves, so most requests get past the token to the input checks.
  const caller: fc.Arbitrary<Caller> = op.anonymous
    ? fc.constantFrom<Caller>('anonymous', 'anonymous', 'admin', 'user')
    : fc.constantFrom<Caller>('admin', 'admin', 'admin', 'user', 'user', 'anonymous', 'forged');
  return fc.record({ path, query, body, caller }).map((r) => ({ method: op.method, target: `${r.path}${r.query}`, body: r.body, caller: r.caller }));
}

/** A compact, printable form of a request, for a report a person can replay by hand. */
export function describeRequest(r: FuzzRequest): string {
  const body = r.body === undefined ? '' : ` body=${r.body.toString('utf8').slice(0, 300)}${r.body.length > 300 ? `… (${r.body.length} bytes)` : ''}`;
  return `${r.method} ${r.target.slice(0, 300)} as ${r.caller}${body}`;
}

/** A report of nothing yet: the start of every run, and what a run that could not start prints. */
export function emptyReport(seed: number): FuzzReport {
  return { seed, rounds: 0, requests: 0, byStatus: {}, counts: { '5xx': 0, 'undocumented-status': 0, 'schema-violation': 0, 'transport-failure': 0, check: 0 }, problems: [] };
}

/** An error's message, with its cause's (fetch's own message, `fetch failed`, says nothing of why). */
function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause === undefined ? err.message : `${err.message} (${errorText(err.cause)})`;
}

/**
 * Runs rounds of generated requests through the gateway until `durationMs` has passed. It never throws:
 * a request without an answer is a problem like a 5xx, and whatever ends the run early (the gateway no
 * longer live, a callback or the fuzzer itself failing) is named in `stopped`, so the caller still has
 * every problem found until then, each with its request, and a summary to print.
 */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const report = emptyReport(options.seed);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    await fuzzRounds(options, report, agent);
  } catch (err) {
    report.stopped = errorText(err);
  } finally {
    agent.destroy();
  }
  return report;
}

async function fuzzRounds(options: FuzzOptions, report: FuzzReport, agent: Agent): Promise<void> {
  const { doc, operations } = operationsOfDocument(options.document as OpenApiDocument);
  const checkAnswer = answerChecker(doc);
  const signer = createSigner(options.clientKey.keyId, { alg: 'hmac-sha256', secret: options.clientKey.secret });
  const base = new URL(options.gatewayUrl);
  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const problem = (p: FuzzProblem) => {
    report.counts[p.kind] += 1;
    if (report.problems.length < KEPT_PROBLEMS) report.problems.push(p);
  };
  const deadline = Date.now() + options.durationMs;
  while (Date.now() < deadline) {
    for (const [index, op] of operations.entries()) {
      if (Date.now() >= deadline) break;
      // Fresh tokens per batch: a generated DELETE /v1/auth/sessions ends the caller's own sessions.
      const tokens = await options.tokens().catch((err: unknown) => {
        throw new Error(`could not get the callers' tokens: ${errorText(err)}`);
      });
      const requests = fc.sample(requestsFor(doc, op), { seed: batchSeed(options.seed, report.rounds, index), numRuns: options.batch ?? 5 });
      for (const generated of requests) {
        const fuzzed: FuzzRequest = { operation: op.id, ...generated };
        const bearer = fuzzed.caller === 'admin' ? tokens.admin : fuzzed.caller === 'user' ? tokens.user : fuzzed.caller === 'forged' ? `${tokens.admin.slice(0, -4)}AAAA` : undefined;
        const [path, query] = splitTarget(fuzzed.target);
        const headers: Record<string, string> = {
          ...(await signRequest(
            {
              method: fuzzed.method,
              url: { pathname: path, search: query },
              idempotencyKey: randomUUID(),
              body: fuzzed.body === undefined ? undefined : new Uint8Array(fuzzed.body),
              authorization: bearer === undefined ? undefined : `Bearer ${bearer}`,
            },
            signer,
          )),
        };
        if (fuzzed.body !== undefined) headers['content-type'] = 'application/json';
        const sent = await exchange({ agent, base, method: fuzzed.method, target: fuzzed.target, headers, body: fuzzed.body, timeoutMs }).catch((err: unknown) => {
          throw new Error(`could not send ${describeRequest(fuzzed)}: ${errorText(err)}`);
        });
        report.requests += 1;
        const { answer } = sent;
        if (answer === undefined) {
          report.byStatus['no-answer'] = (report.byStatus['no-answer'] ?? 0) + 1;
          problem({ kind: 'transport-failure', request: fuzzed, status: undefined, detail: sent.failure });
          // One request may have cut its own connection while the gateway serves on; a gateway that no
          // longer answers its liveness probe died or stalls, and every later request would fail alike.
          const live = await exchange({ base, method: 'GET', target: '/health/live', headers: {}, body: undefined, timeoutMs });
          if (live.answer?.status !== 200) {
            throw new Error(`the gateway no longer answers GET /health/live (${live.failure ?? `status ${live.answer?.status}`}) after ${describeRequest(fuzzed)}`);
          }
          continue;
        }
        report.byStatus[answer.status] = (report.byStatus[answer.status] ?? 0) + 1;
        checkAnswer(op, fuzzed, answer, problem);
        const own = await options.check?.(fuzzed, answer.status).catch((err: unknown) => {
          throw new Error(`the check after ${describeRequest(fuzzed)} failed: ${errorText(err)}`);
        });
        if (own !== undefined) problem({ kind: 'check', request: fuzzed, status: answer.status, detail: own });
      }
    }
    report.rounds += 1;
    options.onRound?.(report);
  }
}

function splitTarget(target: string): [string, string] {
  const at = target.indexOf('?');
  return at === -1 ? [target, ''] : [target.slice(0, at), target.slice(at)];
}

/** One problem as printed: what was wrong, the request that caused it (to replay by hand), and the detail. */
export function describeProblem(p: FuzzProblem): string {
  return `${p.kind}${p.status === undefined ? '' : ` ${p.status}`}: ${describeRequest(p.request)}\n    ${p.detail}`;
}

/** The report's last line: what `pnpm fuzz` promises to print, whatever ended the run. */
export function summaryLine(report: FuzzReport, durationMs: number): string {
  const counts = report.counts;
  return (
    `fuzz: seed=${report.seed} duration=${Math.round(durationMs / 1000)}s rounds=${report.rounds} requests=${report.requests} 5xx=${counts['5xx']} ` +
    `schema-violations=${counts['schema-violation']} undocumented-statuses=${counts['undocumented-status']} transport-failures=${counts['transport-failure']} ` +
    `check-failures=${counts.check}${report.stopped === undefined ? '' : ' stopped-early=yes'}`
  );
}

/** The number of problems of every kind, those past the kept ones included. */
export function problemCount(report: FuzzReport): number {
  return Object.values(report.counts).reduce((sum, n) => sum + n, 0);
}
