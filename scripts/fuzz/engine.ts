// The schema-driven fuzzer (issue 16): for every operation of the gateway's merged API document, seeded
// valid and mutated requests, each signed with a fresh nonce and idempotency key and sent through the
// real stack; every answer is checked against the document: no 5xx, a status the operation lists, and
// a body that matches the schema documented for that status. Used by `pnpm fuzz` (scripts/fuzz.ts) and
// by the short run in `pnpm test` (test/reliability/schema-fuzz.test.ts).
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import fc from 'fast-check';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { createSigner, signRequest } from '@platform/client';
import { type Operation, type Schema, hostileValue, jsonBytes, mutated, NUMBER_LOOKALIKES, operationsOfDocument, pathValue, valid } from './schema-arbitrary.ts';

type Json = Record<string, unknown>;

/** Who a request is sent as. */
export type Caller = 'admin' | 'user' | 'anonymous' | 'forged';

/** One generated request. */
export interface FuzzRequest {
  operation: string;
  method: string;
  /** Path and query, exactly as sent. */
  target: string;
  body: Buffer | undefined;
  caller: Caller;
}

/** An answer the document does not allow. */
export interface FuzzProblem {
  kind: '5xx' | 'undocumented-status' | 'schema-violation' | 'check';
  request: FuzzRequest;
  status: number;
  detail: string;
}

/** What a run did and found. */
export interface FuzzReport {
  seed: number;
  rounds: number;
  requests: number;
  byStatus: Record<string, number>;
  counts: Record<FuzzProblem['kind'], number>;
  /** The first problems found, in order, for replay and the failure message. */
  problems: FuzzProblem[];
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
  /** A check of the test's own after each answer (e.g. nothing changed after a refusal); a problem text, or undefined. */
  check?: (request: FuzzRequest, status: number) => Promise<string | undefined>;
  /** Called after each round, e.g. to print progress. */
  onRound?: (report: FuzzReport) => void;
}

/** At most this many problems are kept; the counts go on. */
const KEPT_PROBLEMS = 50;

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

/** The JSON-pointer escape of one reference token (RFC 6901). */
const pointer = (token: string) => token.replaceAll('~', '~0').replaceAll('/', '~1');

/** Compiles, once each, the body schema documented for an operation's status. */
function responseValidators(doc: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  // OpenAPI's own formats: int32/int64 are checked by range; the rest describe, not constrain.
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addSchema(doc, 'api');
  const cache = new Map<string, ValidateFunction | null>();
  return (op: Operation, status: number): ValidateFunction | null => {
    const key = `${op.method} ${op.path} ${status}`;
    if (!cache.has(key)) {
      const responses = ((doc.paths as Json)[op.path] as Json)[op.method.toLowerCase()] as Json;
      const byStatus = responses.responses as Json;
      const documented = String(status) in byStatus ? String(status) : `${String(status)[0]}XX` in byStatus ? `${String(status)[0]}XX` : 'default';
      let response = byStatus[documented] as Json | undefined;
      // Shared answers are references to components.responses.
      while (typeof response?.$ref === 'string') {
        response = response.$ref
          .replace(/^#\//, '')
          .split('/')
          .reduce<unknown>((at, token) => (at as Json)[token.replaceAll('~1', '/').replaceAll('~0', '~')], doc) as Json;
      }
      const content = response?.content as Json | undefined;
      const mediaType = content === undefined ? undefined : Object.keys(content).find((type) => /json/i.test(type));
      if (response === undefined || mediaType === undefined) cache.set(key, null);
      else {
        const ref = `api#/paths/${pointer(op.path)}/${op.method.toLowerCase()}/responses/${pointer(documented)}`;
        // A $ref'd response is validated through the component it names, so resolve the path the same way.
        const target = typeof (byStatus[documented] as Json).$ref === 'string' ? `api${String((byStatus[documented] as Json).$ref)}` : ref;
        cache.set(key, ajv.compile({ $ref: `${target}/content/${pointer(mediaType)}/schema` }));
      }
    }
    return cache.get(key) ?? null;
  };
}

interface Answer {
  status: number;
  body: Buffer;
  contentType: string | undefined;
}

function send(agent: Agent, base: URL, method: string, target: string, headers: Record<string, string>, body: Buffer | undefined): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, hostname: base.hostname, port: base.port, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), contentType: res.headers['content-type'] }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A compact, printable form of a request, for a report a person can replay by hand. */
export function describeRequest(r: FuzzRequest): string {
  const body = r.body === undefined ? '' : ` body=${r.body.toString('utf8').slice(0, 300)}${r.body.length > 300 ? `… (${r.body.length} bytes)` : ''}`;
  return `${r.method} ${r.target.slice(0, 300)} as ${r.caller}${body}`;
}

/** Runs rounds of generated requests through the gateway until `durationMs` has passed. */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const { doc, operations } = operationsOfDocument(options.document);
  const validatorFor = responseValidators(doc);
  const signer = createSigner(options.clientKey.keyId, { alg: 'hmac-sha256', secret: options.clientKey.secret });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const base = new URL(options.gatewayUrl);
  const report: FuzzReport = { seed: options.seed, rounds: 0, requests: 0, byStatus: {}, counts: { '5xx': 0, 'undocumented-status': 0, 'schema-violation': 0, check: 0 }, problems: [] };
  const problem = (p: FuzzProblem) => {
    report.counts[p.kind] += 1;
    if (report.problems.length < KEPT_PROBLEMS) report.problems.push(p);
  };
  const deadline = Date.now() + options.durationMs;
  try {
    while (Date.now() < deadline) {
      for (const [index, op] of operations.entries()) {
        if (Date.now() >= deadline) break;
        // Fresh tokens per batch: a generated DELETE /v1/auth/sessions ends the caller's own sessions.
        const tokens = await options.tokens();
        const requests = fc.sample(requestsFor(doc, op), { seed: batchSeed(options.seed, report.rounds, index), numRuns: options.batch ?? 5 });
        const statuses = new Set(Object.keys(((((doc.paths as Json)[op.path] as Json)[op.method.toLowerCase()] as Json).responses as Json) ?? {}));
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
          const answer = await send(agent, base, fuzzed.method, fuzzed.target, headers, fuzzed.body);
          report.requests += 1;
          report.byStatus[answer.status] = (report.byStatus[answer.status] ?? 0) + 1;
          checkAnswer(op, fuzzed, answer, statuses, validatorFor, problem);
          const own = await options.check?.(fuzzed, answer.status);
          if (own !== undefined) problem({ kind: 'check', request: fuzzed, status: answer.status, detail: own });
        }
      }
      report.rounds += 1;
      options.onRound?.(report);
    }
  } finally {
    agent.destroy();
  }
  return report;
}

function splitTarget(target: string): [string, string] {
  const at = target.indexOf('?');
  return at === -1 ? [target, ''] : [target.slice(0, at), target.slice(at)];
}

function checkAnswer(
  op: Operation,
  request: FuzzRequest,
  answer: Answer,
  statuses: ReadonlySet<string>,
  validatorFor: (op: Operation, status: number) => ValidateFunction | null,
  problem: (p: FuzzProblem) => void,
): void {
  const text = () => answer.body.toString('utf8').slice(0, 400);
  if (answer.status >= 500) {
    problem({ kind: '5xx', request, status: answer.status, detail: text() });
    return;
  }
  const listed = statuses.has(String(answer.status)) || statuses.has(`${String(answer.status)[0]}XX`) || statuses.has('default');
  if (!listed) {
    problem({ kind: 'undocumented-status', request, status: answer.status, detail: `${op.method} ${op.path} lists ${[...statuses].join(' ')}; body ${text()}` });
    return;
  }
  const validate = validatorFor(op, answer.status);
  if (validate === null) {
    if (answer.body.length > 0 && answer.status !== 303) problem({ kind: 'schema-violation', request, status: answer.status, detail: `no body is documented, got ${text()}` });
    return;
  }
  let body: unknown;
  try {
    body = JSON.parse(answer.body.toString('utf8'));
  } catch {
    problem({ kind: 'schema-violation', request, status: answer.status, detail: `not JSON (${answer.contentType ?? 'no content type'}): ${text()}` });
    return;
  }
  if (!validate(body)) {
    problem({ kind: 'schema-violation', request, status: answer.status, detail: `${JSON.stringify(validate.errors?.slice(0, 3))}; body ${text()}` });
    return;
  }
  if (answer.status >= 400 && (body as { path?: unknown }).path !== request.target) {
    problem({ kind: 'schema-violation', request, status: answer.status, detail: `error path ${JSON.stringify((body as { path?: unknown }).path)} is not the target` });
  }
}

/** The report's last line: what `pnpm fuzz` promises to print. */
export function summaryLine(report: FuzzReport, durationMs: number): string {
  return `fuzz: seed=${report.seed} duration=${Math.round(durationMs / 1000)}s rounds=${report.rounds} requests=${report.requests} 5xx=${report.counts['5xx']} schema-violations=${report.counts['schema-violation']} undocumented-statuses=${report.counts['undocumented-status']} check-failures=${report.counts.check}`;
}
