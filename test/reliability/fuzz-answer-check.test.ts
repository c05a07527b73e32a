import assert from 'node:assert/strict';
import { answerChecker } from '../../scripts/fuzz/answer-check.ts';
import type { FuzzProblem } from '../../scripts/fuzz/findings.ts';
import { operationsOfDocument } from '../../scripts/fuzz/schema-arbitrary.ts';

/**
 * The fuzzer's verdict on a request whose empty path value made it no operation's (`/v1/things/` for
 * `/v1/things/{thingId}`): the router's 404 in SPEC.md's error shape is what any unknown path gets, whether or
 * not the operation lists 404; anything else is a problem. A request on the operation's own path is judged
 * by what the operation lists.
 */
describe('the fuzzer\'s answer check: a request whose path is no operation\'s', () => {
  const json = (schema: Record<string, unknown>) => ({ content: { 'application/json': { schema } } });
  const document = {
    openapi: '3.1.0',
    info: { title: 'things', version: '1' },
    paths: {
      '/v1/things/{thingId}': {
        delete: {
          operationId: 'removeThing',
          security: [],
          parameters: [{ name: 'thingId', in: 'path' as const, required: true, schema: { type: 'string' } }],
          // No 404: an unknown thing answers 401, as a wrong code does.
          responses: { '200': { description: 'removed' }, '401': { description: 'refused', ...json({ $ref: '#/components/schemas/ErrorBody' }) } },
        },
      },
    },
    components: {
      schemas: {
        ErrorBody: {
          type: 'object',
          additionalProperties: false,
          required: ['timestamp', 'status', 'error', 'message', 'path'],
          properties: { timestamp: { type: 'string' }, status: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' }, path: { type: 'string' } },
        },
      },
    },
  };
  const { doc, operations } = operationsOfDocument(document);
  const check = answerChecker(doc);
  const op = operations[0]!;

  /** The problems the check finds with `status` and `body` as the answer to DELETE `target`. */
  function problemsOf(target: string, status: number, body: unknown): Array<Pick<FuzzProblem, 'kind' | 'status'>> {
    const found: FuzzProblem[] = [];
    const bytes = Buffer.from(body === undefined ? '' : JSON.stringify(body));
    check(op, { operation: op.id, method: 'DELETE', target, body: undefined, caller: 'user' }, { status, body: bytes, contentType: 'application/json' }, (p) => found.push(p));
    return found.map(({ kind, status: s }) => ({ kind, status: s }));
  }
  const errorBody = (status: number, path: string) => ({ timestamp: new Date().toISOString(), status, error: 'Not Found', message: `No route for DELETE ${path}`, path });

  it('the router\'s 404 in the error shape is no problem, though the operation does not list 404', () => {
    assert.deepEqual(problemsOf('/v1/things/', 404, errorBody(404, '/v1/things/')), []);
    assert.deepEqual(problemsOf('/v1/things/?x=1', 404, errorBody(404, '/v1/things/?x=1')), []);
  });

  it('a 404 out of the error shape, or any other status, is a problem', () => {
    assert.deepEqual(problemsOf('/v1/things/', 404, { gone: true }), [{ kind: 'schema-violation', status: 404 }]);
    assert.deepEqual(problemsOf('/v1/things/', 200, undefined), [{ kind: 'undocumented-status', status: 200 }]);
    assert.deepEqual(problemsOf('/v1/things/', 500, errorBody(500, '/v1/things/')), [{ kind: '5xx', status: 500 }]);
  });

  it('on the operation\'s own path, a 404 it does not list is a problem', () => {
    assert.deepEqual(problemsOf('/v1/things/abc', 404, errorBody(404, '/v1/things/abc')), [{ kind: 'undocumented-status', status: 404 }]);
    assert.deepEqual(problemsOf('/v1/things/a%2Fb', 404, errorBody(404, '/v1/things/a%2Fb')), [{ kind: 'undocumented-status', status: 404 }]);
    assert.deepEqual(problemsOf('/v1/things/abc', 401, { ...errorBody(401, '/v1/things/abc'), error: 'Unauthorized' }), []);
  });
});
