import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isErrorBody } from '@platform/errors';
import { OPENAPI_PATH as IDENTITY_OPENAPI } from '../../services/identity/src/app.ts';
import { OPENAPI_PATH as RISK_OPENAPI } from '../../services/risk/src/app.ts';
import { type Operation, hostileValue, jsonBytes, mutated, operationsOf, pathValue, valid } from './support/schema-arbitrary.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';

/** Generated requests per operation; raise it locally (FUZZ_RUNS=500) for a deeper search. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 40);

interface GeneratedRequest {
  target: string;
  body: unknown;
  anonymous: boolean;
}

type Document = ReturnType<typeof operationsOf>['doc'];

/** Requests for `op`: path and query values valid or hostile, the body on-schema (1 in 4) or off it. */
function requestsFor(doc: Document, op: Operation): fc.Arbitrary<GeneratedRequest> {
  const path = fc
    .record(Object.fromEntries(Object.entries(op.pathParams).map(([name, schema]) => [name, pathValue(doc, schema)])))
    .map((values) => op.path.replace(/\{(\w+)\}/g, (_m, name: string) => values[name] ?? ''));
  const queryValue = (schema: Parameters<typeof valid>[1]) =>
    // Capped so the request line stays under Node's 16 kB header limit (a 431 is tested on its own).
    fc.oneof(valid(doc, schema).map(String), hostileValue.map((v) => (typeof v === 'string' ? v : jsonBytes(v).toString()).slice(0, 1000)));
  const queryEntries = fc.tuple(
    ...Object.entries(op.queryParams).map(([name, { schema }]) => fc.option(queryValue(schema), { nil: undefined }).map((v) => [name, v] as const)),
    fc.option(fc.constantFrom<[string, string]>(['unknown', '1'], ['limit', '1'], ['__proto__[x]', '1'], ['latitude[]', '1']), { nil: undefined }),
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
      : fc.oneof({ weight: 1, arbitrary: valid(doc, op.body) }, { weight: 3, arbitrary: mutated(doc, op.body) });
  return fc.record({ path, query, body, anonymous: fc.boolean() }).map((r) => {
    const request = { target: `${r.path}${r.query}`, body: r.body, anonymous: r.anonymous && op.anonymous };
    // Counterexamples are printed: keep a 60 kB body or a 10 kB target from flooding the report.
    return Object.defineProperty(request, fc.toStringMethod, {
      value: () => `${op.method} ${request.target.slice(0, 300)} body=${request.body === undefined ? '-' : jsonBytes(request.body).toString().slice(0, 300)}`,
    });
  });
}

describe('hostile input through the gateway (fast-check over both OpenAPI documents)', function () {
  this.timeout(300_000);
  let stack: Stack;
  let admin: LoggedInUser;
  let baseline: string;

  before(async () => {
    stack = await startStack({ env: { PASSWORD_RESET_REQUESTS_PER_HOUR: '100000' } });
  });
  // A fresh ADMIN session per operation: `DELETE /v1/auth/sessions` generated for one ends the caller's own.
  beforeEach(async () => {
    admin = await stack.userWith(['ADMIN']);
    baseline = await stack.snapshot();
  });
  after(async () => {
    await stack?.close();
  });

  const documents = [
    { service: 'identity', ...operationsOf(IDENTITY_OPENAPI) },
    { service: 'risk', ...operationsOf(RISK_OPENAPI) },
  ];

  for (const { service, doc, operations } of documents) {
    for (const op of operations) {
      it(`${op.method} ${op.path} (${service}.${op.id}): never a 5xx, always the error shape, no database change when refused`, async () => {
        await fc.assert(
          fc.asyncProperty(requestsFor(doc, op), async (req) => {
            const body = req.body === undefined ? undefined : jsonBytes(req.body);
            const res = await stack.call(op.method, req.target, { body, bearer: req.anonymous ? undefined : admin.accessToken });
            const text = res.body.toString();
            assert.ok(res.status < 500, `${res.status}: ${text}`);
            const after = await stack.snapshot();
            if (res.status >= 400) {
              const body = res.json();
              assert.ok(isErrorBody(body), text);
              assert.equal(body.status, res.status, text);
              assert.equal(body.path, req.target, text);
              assert.equal(after, baseline, `the database changed after a ${res.status}`);
            }
            baseline = after;
          }),
          { numRuns: RUNS, endOnFailure: true },
        );
      });
    }
  }

  it('when payloads carried __proto__ and constructor keys, no process prototype was polluted', () => {
    const probe = {} as Record<string, unknown>;
    assert.equal(probe.polluted, undefined);
    assert.equal(probe.isAdmin, undefined);
    assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'roles'), false);
  });
});
