import assert from 'node:assert/strict';
import express, { type Express } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import request from 'supertest';
import { errorHandler, isErrorBody, notFoundHandler } from '../src/index.ts';

type ApiSpec = Parameters<typeof OpenApiValidator.middleware>[0]['apiSpec'];

/** A small OpenAPI 3.1 document: one body-validated operation and one with a typed path parameter. */
function thingsDocument(): ApiSpec {
  const document = {
    openapi: '3.1.0',
    info: { title: 'things', version: '1.0.0' },
    paths: {
      '/things': {
        post: {
          operationId: 'createThing',
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['name'],
                  properties: {
                    name: { type: 'string', minLength: 2 },
                    count: { type: 'integer', minimum: 1 },
                  },
                },
              },
            },
          },
          responses: { '201': { description: 'Created' } },
        },
      },
      '/things/{id}': {
        get: {
          operationId: 'getThing',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
          responses: { '200': { description: 'The thing' } },
        },
      },
    },
  };
  // The library's document type is OpenAPI 3.0 flavoured; the object above is valid 3.1.
  return document as unknown as ApiSpec;
}

/** A real app: express.json, the validator on the inline document, the two routes, then our handlers. */
function thingsApp(): Express {
  const app = express();
  app.use(express.json());
  app.use(
    OpenApiValidator.middleware({
      apiSpec: thingsDocument(),
      // Every violation is reported, not just the first one.
      validateRequests: { allErrors: true },
      validateResponses: false,
    }),
  );
  app.post('/things', (req, res) => {
    res.status(201).json(req.body as unknown);
  });
  app.get('/things/:id', (req, res) => {
    res.json({ id: req.params.id });
  });
  app.use(notFoundHandler);
  app.use(errorHandler());
  return app;
}

/** The body is exactly the error shape (keys and types), with a timestamp of just now. */
function assertShape(res: request.Response, status: number, error: string, path: string, withMessages: boolean): void {
  assert.equal(res.status, status);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.body as Record<string, unknown>;
  assert.ok(isErrorBody(body), `not an error body: ${res.text}`);
  const keys = ['error', 'message', 'path', 'status', 'timestamp'];
  if (withMessages) keys.push('messages');
  assert.deepEqual(Object.keys(body).sort(), keys.sort());
  assert.equal(body.status, status);
  assert.equal(body.error, error);
  assert.equal(body.path, path);
  const when = Date.parse(body.timestamp as string);
  assert.equal(new Date(when).toISOString(), body.timestamp);
  assert.ok(Math.abs(Date.now() - when) < 5000);
}

describe('errorHandler behind express-openapi-validator', () => {
  it('when the request matches the document, the route answers', async () => {
    const res = await request(thingsApp()).post('/things').send({ name: 'pump', count: 2 });
    assert.equal(res.status, 201);
    assert.deepEqual(res.body, { name: 'pump', count: 2 });
  });

  it('when the body breaks three rules, answers 400 with one message per violation, each naming its location', async () => {
    const res = await request(thingsApp()).post('/things').send({ count: 0, extra: true });
    assertShape(res, 400, 'Bad Request', '/things', true);
    const { messages, message } = res.body as { messages: string[]; message: string };
    assert.equal(messages.length, 3);
    for (const m of messages) assert.match(m, /^body[. ]/, `"${m}" names no body location`);
    assert.deepEqual(new Set(messages), new Set([
      "body.name must have required property 'name'",
      'body.extra must NOT have additional properties',
      'body.count must be >= 1',
    ]));
    assert.equal(message, messages.join('; '));
  });

  it('names an unknown field, but not one whose name is no plain name (the client\'s text: a token sent as a field name is not echoed)', async () => {
    const token = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    const res = await request(thingsApp()).post('/things').send({ name: 'pump', count: 2, [`{"token": "${token}"}`]: '', 'a b': 1 });
    assertShape(res, 400, 'Bad Request', '/things', true);
    assert.deepEqual(res.body.messages, ['body must NOT have additional properties', 'body must NOT have additional properties']);
    assert.ok(!JSON.stringify(res.body).includes('eyJ'), JSON.stringify(res.body));
  });

  it('when one body field breaks one rule, answers 400 with that one message', async () => {
    const res = await request(thingsApp()).post('/things').send({ name: 'x' });
    assertShape(res, 400, 'Bad Request', '/things', true);
    assert.deepEqual(res.body.messages, ['body.name must NOT have fewer than 2 characters']);
    assert.equal(res.body.message, 'body.name must NOT have fewer than 2 characters');
  });

  it('when the body is not an object, answers 400 naming the body', async () => {
    const res = await request(thingsApp()).post('/things').send([1, 2]);
    assertShape(res, 400, 'Bad Request', '/things', true);
    assert.deepEqual(res.body.messages, ['body must be object']);
  });

  it('when a path parameter has the wrong type, answers 400 naming path.id', async () => {
    const res = await request(thingsApp()).get('/things/abc');
    assertShape(res, 400, 'Bad Request', '/things/abc', true);
    assert.deepEqual(res.body.messages, ['path.id must be integer']);
    assert.equal(res.body.message, 'path.id must be integer');
  });

  it('when the path parameter is well-typed, the route answers', async () => {
    const res = await request(thingsApp()).get('/things/12');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { id: 12 });
  });

  it('when the query carries an undocumented parameter, answers 400 naming it, with the query kept in path', async () => {
    const res = await request(thingsApp()).get('/things/12?full=1');
    assertShape(res, 400, 'Bad Request', '/things/12?full=1', true);
    assert.deepEqual(res.body.messages, ["query.full Unknown query parameter 'full'"]);
  });

  it('when the method is not documented for the path, answers 405 with Allow', async () => {
    const res = await request(thingsApp()).delete('/things');
    assertShape(res, 405, 'Method Not Allowed', '/things', false);
    assert.equal(res.headers.allow, 'POST');
    assert.equal(res.body.message, 'Method DELETE is not allowed here; allowed: POST');
  });

  it('when the path is not in the document, answers 404 in the error shape', async () => {
    const res = await request(thingsApp()).get('/nothing/here?x=1');
    assertShape(res, 404, 'Not Found', '/nothing/here?x=1', false);
    assert.equal(res.body.message, 'No route for GET /nothing/here');
  });

  it('when the Content-Type is not the documented one, answers 415', async () => {
    const res = await request(thingsApp()).post('/things').set('Content-Type', 'text/plain').send('name=pump');
    assertShape(res, 415, 'Unsupported Media Type', '/things', false);
    assert.equal(res.body.message, 'Unsupported Content-Type; send application/json');
    assert.ok(!res.text.includes('text/plain'), 'the validator text is not echoed');
  });
});
