// The fuzzer's verdict on one answer, from the document alone: no 5xx, a status the operation lists, and
// a body that matches the schema documented for that status (Ajv, with OpenAPI's own formats).
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { type HttpMethod, type OpenApiDocument, type OpenApiOperation, deref, isReference } from '@platform/service-kit';
import type { FuzzProblem, FuzzRequest } from './findings.ts';
import type { Answer } from './exchange.ts';
import type { Operation } from './schema-arbitrary.ts';

/** Checks the answer to a request for `op`, reporting what is wrong with it through `problem`. */
export type AnswerCheck = (op: Operation, request: FuzzRequest, answer: Answer, problem: (p: FuzzProblem) => void) => void;

/** The JSON-pointer escape of one reference token (RFC 6901). */
const pointer = (token: string) => token.replaceAll('~', '~0').replaceAll('/', '~1');

/** The document's own object for `op`. */
const documentedOperation = (doc: OpenApiDocument, op: Operation): OpenApiOperation => doc.paths?.[op.path]?.[op.method.toLowerCase() as HttpMethod] ?? {};

/** Compiles, once each, the body schema documented for an operation's status. */
function responseValidators(doc: OpenApiDocument) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  // OpenAPI's own formats: int32/int64 are checked by range; the rest describe, not constrain.
  ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
  ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
  ajv.addSchema(doc, 'api');
  const cache = new Map<string, ValidateFunction | null>();
  return (op: Operation, status: number | 'no-route'): ValidateFunction | null => {
    if (status === 'no-route') {
      // SPEC.md's error shape, as every service's document names it.
      if (!cache.has(status)) cache.set(status, doc.components?.schemas?.ErrorBody === undefined ? null : ajv.compile({ $ref: 'api#/components/schemas/ErrorBody' }));
      return cache.get(status) ?? null;
    }
    const key = `${op.method} ${op.path} ${status}`;
    if (!cache.has(key)) {
      const byStatus = documentedOperation(doc, op).responses ?? {};
      const documented = String(status) in byStatus ? String(status) : `${String(status)[0]}XX` in byStatus ? `${String(status)[0]}XX` : 'default';
      const listed = byStatus[documented];
      // Shared answers are references to components.responses.
      const response = listed === undefined ? undefined : deref(doc, listed);
      const content = response?.content;
      const mediaType = content === undefined ? undefined : Object.keys(content).find((type) => /json/i.test(type));
      if (response === undefined || mediaType === undefined) cache.set(key, null);
      else {
        const ref = `api#/paths/${pointer(op.path)}/${op.method.toLowerCase()}/responses/${pointer(documented)}`;
        // A $ref'd response is validated through the component it names, so resolve the path the same way.
        const target = isReference(listed) ? `api${listed.$ref}` : ref;
        cache.set(key, ajv.compile({ $ref: `${target}/content/${pointer(mediaType)}/schema` }));
      }
    }
    return cache.get(key) ?? null;
  };
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
  // SPEC.md's error shape names the target; RFC 6749's (a token endpoint's 400, CONTRACT.md part 16) has no path.
  if (answer.status >= 400 && (body as { status?: unknown }).status !== undefined && (body as { path?: unknown }).path !== request.target) {
    problem({ kind: 'schema-violation', request, status: answer.status, detail: `error path ${JSON.stringify((body as { path?: unknown }).path)} is not the target` });
  }
}


/** The paths of `op`: its template with a segment of one character or more for each parameter. */
function pathsOf(op: Operation): RegExp {
  const pattern = op.path.split(/\{[^}]+\}/).map((literal) => literal.replace(/[.*+?^$()|[\]\\]/g, '\\$&')).join('[^/]+');
  return new RegExp(`^${pattern}$`);
}

/** The one status a request whose path is no operation's may get: the router's 404, in SPEC.md's error shape. */
const NO_ROUTE = new Set(['404']);

/** The checker of the answers to `doc`'s operations (each status's schema compiled once, when first met). */
export function answerChecker(doc: OpenApiDocument): AnswerCheck {
  const validatorFor = responseValidators(doc);
  const statusesOf = new Map<Operation, ReadonlySet<string>>();
  const pathsOfOperation = new Map<Operation, RegExp>();
  return (op, request, answer, problem) => {
    let paths = pathsOfOperation.get(op);
    if (paths === undefined) {
      paths = pathsOf(op);
      pathsOfOperation.set(op, paths);
    }
    // Generated for `op`, but with an empty path value (`/v1/auth/factors/`): no operation's path, answered as any unknown path is.
    if (!paths.test(request.target.split('?', 1)[0] ?? '')) {
      checkAnswer(op, request, answer, NO_ROUTE, () => validatorFor(op, 'no-route'), problem);
      return;
    }
    let statuses = statusesOf.get(op);
    if (statuses === undefined) {
      statuses = new Set(Object.keys(documentedOperation(doc, op).responses ?? {}));
      statusesOf.set(op, statuses);
    }
    checkAnswer(op, request, answer, statuses, validatorFor, problem);
  };
}
