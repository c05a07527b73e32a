import assert from 'node:assert/strict';
import { HTTP_METHODS, type OpenApiDocument, deref, isHttpMethod, isReference, operationsOf, resolveRef } from '../src/openapi-document.ts';

const ok = { '200': { description: 'ok' } };

describe('operationsOf', () => {
  it('lists every operation, path by path and in HTTP_METHODS order within a path, whatever the key order', () => {
    const document: OpenApiDocument = {
      paths: {
        '/b': { delete: { responses: ok }, get: { responses: ok }, post: { operationId: 'makeB' } },
        '/a/{id}': { patch: { responses: ok } },
      },
    };
    assert.deepEqual(
      operationsOf(document).map((o) => `${o.method} ${o.path}`),
      ['get /b', 'post /b', 'delete /b', 'patch /a/{id}'],
    );
    assert.equal(operationsOf(document)[1]!.operation.operationId, 'makeB');
  });

  it('ignores keys that name no method, upper-case or unknown ones included, and methods whose value is no object', () => {
    const document = {
      paths: {
        '/x': {
          summary: 'shared',
          parameters: [],
          'x-internal': { responses: ok },
          GET: { responses: ok },
          query: { responses: ok },
          copy: { responses: ok },
          put: null,
          head: 'nothing',
          trace: { responses: ok },
        },
        '/not-an-item': 'text',
      },
    } as unknown as OpenApiDocument;
    assert.deepEqual(
      operationsOf(document).map((o) => `${o.method} ${o.path}`),
      ['trace /x'],
    );
  });

  it('finds none in a document without paths, or in something that is no document', () => {
    assert.deepEqual(operationsOf({ openapi: '3.1.0' }), []);
    assert.deepEqual(operationsOf(null as unknown as OpenApiDocument), []);
  });

  it('merges the path item parameters with the operation ones, resolved, an operation one replacing the same name and location', () => {
    const document: OpenApiDocument = {
      components: {
        parameters: {
          Limit: { name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 } },
          LimitAlias: { $ref: '#/components/parameters/Limit' },
        },
      },
      paths: {
        '/users/{userId}': {
          parameters: [
            { name: 'userId', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'limit', in: 'query', schema: { type: 'integer' } },
            { name: 'trace', in: 'header' },
          ],
          get: {
            parameters: [{ $ref: '#/components/parameters/LimitAlias' }, { name: 'userId', in: 'query' }],
          },
          delete: {},
        },
      },
    };
    const [get, remove] = operationsOf(document);
    assert.deepEqual(get!.parameters, [
      { name: 'userId', in: 'path', required: true, schema: { type: 'string' } },
      { name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 } },
      { name: 'trace', in: 'header' },
      { name: 'userId', in: 'query' },
    ]);
    assert.deepEqual(
      remove!.parameters.map((p) => `${p.in} ${p.name}`),
      ['path userId', 'query limit', 'header trace'],
    );
  });

  it("gives each operation its own security, else the document's, else none", () => {
    const bearer = [{ bearerAuth: [] }];
    const paths = { '/p': { get: { security: [] }, post: { security: [{}, ...bearer] }, put: {} } };
    assert.deepEqual(
      operationsOf({ security: bearer, paths }).map((o) => [o.method, o.security]),
      [
        ['get', []],
        ['put', bearer],
        ['post', [{}, ...bearer]],
      ],
    );
    assert.deepEqual(operationsOf({ paths }).find((o) => o.method === 'put')!.security, []);
  });

  it('when a parameter $ref names nothing or is cyclic, throws naming it', () => {
    const broken: OpenApiDocument = { paths: { '/p': { get: { parameters: [{ $ref: '#/components/parameters/Gone' }] } } } };
    assert.throws(() => operationsOf(broken), /\$ref #\/components\/parameters\/Gone names nothing/);
    const cyclic: OpenApiDocument = {
      components: { parameters: { A: { $ref: '#/components/parameters/B' }, B: { $ref: '#/components/parameters/A' } } },
      paths: { '/p': { parameters: [{ $ref: '#/components/parameters/A' }], get: {} } },
    };
    assert.throws(() => operationsOf(cyclic), /cyclic \$ref/);
  });
});

describe('resolveRef', () => {
  const document: OpenApiDocument = {
    components: { schemas: { 'a/b': { type: 'string' }, 'c~d': { type: 'number' }, 'e f': { type: 'null' }, List: { allOf: [{ type: 'array' }, { minItems: 1 }] } } },
  };

  it('follows a JSON pointer, with its ~1 and ~0 escapes, percent-encoding and array indexes', () => {
    assert.deepEqual(resolveRef(document, '#/components/schemas/a~1b'), { type: 'string' });
    assert.deepEqual(resolveRef(document, '#/components/schemas/c~0d'), { type: 'number' });
    assert.deepEqual(resolveRef(document, '#/components/schemas/e%20f'), { type: 'null' });
    assert.deepEqual(resolveRef(document, '#/components/schemas/List/allOf/1'), { minItems: 1 });
    assert.equal(resolveRef(document, '#'), document);
  });

  it('names nothing for a missing key, a bad index, an inherited key, a malformed fragment or another document', () => {
    for (const ref of [
      '#/components/schemas/Missing',
      '#/components/schemas/List/allOf/2',
      '#/components/schemas/List/allOf/01',
      '#/components/schemas/List/allOf/length',
      '#/components/toString',
      '#/components/__proto__',
      '#/components/schemas/a~1b/type/length',
      '#components',
      '#/components/%E0%A4%A',
      'other.yaml#/components/schemas/List',
    ]) {
      assert.equal(resolveRef(document, ref), undefined, ref);
    }
  });
});

describe('deref', () => {
  const document: OpenApiDocument = {
    components: {
      schemas: {
        Id: { type: 'string', format: 'uuid' },
        UserId: { $ref: '#/components/schemas/Id' },
        OwnerId: { $ref: '#/components/schemas/UserId' },
        Tree: { type: 'object', properties: { children: { type: 'array', items: { $ref: '#/components/schemas/Tree' } } } },
        Ping: { $ref: '#/components/schemas/Pong' },
        Pong: { $ref: '#/components/schemas/Ping' },
        Self: { $ref: '#/components/schemas/Self' },
        Dangling: { $ref: '#/components/schemas/Nowhere' },
      },
    },
  };

  it('follows a chain of $refs to its end', () => {
    assert.deepEqual(deref(document, { $ref: '#/components/schemas/OwnerId' }), { type: 'string', format: 'uuid' });
  });

  it('gives back what is no reference as it is, undefined included', () => {
    const schema = { type: 'integer' };
    assert.equal(deref(document, schema), schema);
    assert.equal(deref(document, undefined), undefined);
  });

  it('resolves a schema that refers to itself further down (a tree): only the chain at the top is followed', () => {
    const tree = deref<Record<string, unknown>>(document, { $ref: '#/components/schemas/Tree' });
    assert.equal(tree.type, 'object');
  });

  it('when the chain comes back on itself, throws naming the cycle instead of looping', () => {
    assert.throws(() => deref(document, { $ref: '#/components/schemas/Ping' }), {
      message: 'cyclic $ref: #/components/schemas/Ping → #/components/schemas/Pong → #/components/schemas/Ping',
    });
    assert.throws(() => deref(document, { $ref: '#/components/schemas/Self' }), /cyclic \$ref/);
  });

  it('when a reference on the chain names nothing, throws naming it', () => {
    assert.throws(() => deref(document, { $ref: '#/components/schemas/Dangling' }), { message: '$ref #/components/schemas/Nowhere names nothing in the document' });
  });
});

describe('HTTP_METHODS', () => {
  it('are the eight of OpenAPI, lower case, and only they are methods', () => {
    assert.deepEqual([...HTTP_METHODS], ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
    assert.ok(HTTP_METHODS.every(isHttpMethod));
    for (const key of ['GET', 'parameters', 'summary', 'query', 'x-get', '']) assert.equal(isHttpMethod(key), false, key);
    assert.equal(isReference({ $ref: '#/x' }), true);
    assert.equal(isReference({ $ref: 1 }), false);
  });
});
