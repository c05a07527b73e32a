import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type RequestHandler } from 'express';
import request from 'supertest';
import * as errors from '../src/index.ts';
import {
  BadGatewayError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  GatewayTimeoutError,
  HttpError,
  INTERNAL_ERROR_MESSAGE,
  InternalServerError,
  MethodNotAllowedError,
  NotFoundError,
  NotImplementedError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnauthorizedError,
  UnsupportedMediaTypeError,
  errorHandler,
  type ErrorHandlerOptions,
  methodNotAllowedHandler,
  notFoundHandler,
} from '../src/index.ts';

/** What a test expects of an error body, besides a fresh timestamp. */
interface ExpectedBody {
  status: number;
  error: string;
  message: string;
  path: string;
  messages?: string[];
}

/** The body is exactly the error shape: these fields, a timestamp of just now, and no other key. */
function assertErrorBody(res: request.Response, expected: ExpectedBody): void {
  assert.equal(res.status, expected.status);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  const body = res.body as Record<string, unknown>;
  assert.equal(typeof body.timestamp, 'string');
  const when = Date.parse(body.timestamp as string);
  assert.ok(!Number.isNaN(when), `timestamp ${String(body.timestamp)} is not a date`);
  assert.equal(new Date(when).toISOString(), body.timestamp, 'timestamp is ISO 8601');
  assert.ok(Math.abs(Date.now() - when) < 5000, `timestamp ${String(body.timestamp)} is not now`);
  assert.deepEqual(body, { timestamp: body.timestamp, ...expected });
  assert.ok(errors.isErrorBody(body));
}

/** What the request log line would see: the envelope reads `res.err` and `res.refusal` when the answer finishes. */
interface LoggedError {
  finished: boolean;
  err?: unknown;
  refusal?: string;
}

/** Placed before the routes: records `res.err` as it stands when the response finishes. */
function recordLoggedError(seen: LoggedError): RequestHandler {
  return (_req, res, next) => {
    res.on('finish', () => {
      seen.finished = true;
      seen.err = (res as { err?: unknown }).err;
      seen.refusal = (res as { refusal?: string }).refusal;
    });
    next();
  };
}

/** A real app whose one route, GET /boom, runs `handler`; then the 404 and error handlers. */
function appWithRoute(handler: RequestHandler, seen: LoggedError, options?: ErrorHandlerOptions): Express {
  const app = express();
  // Keeps Express's final handler from printing delegated errors during the run.
  app.set('env', 'test');
  app.use(recordLoggedError(seen));
  app.get('/boom', handler);
  app.use(notFoundHandler);
  app.use(errorHandler(options));
  return app;
}

/** An app whose GET /boom throws `err`. */
function appThrowing(err: unknown, seen: LoggedError = { finished: false }, options?: ErrorHandlerOptions): Express {
  return appWithRoute(
    () => {
      throw err;
    },
    seen,
    options,
  );
}

interface ErrorCase {
  cls: unknown;
  make: () => HttpError;
  status: number;
  error: string;
  message: string;
  headers?: Record<string, string>;
}

const errorCases: ErrorCase[] = [
  { cls: HttpError, make: () => new HttpError(422, 'name is taken'), status: 422, error: 'Unprocessable Entity', message: 'name is taken' },
  { cls: BadRequestError, make: () => new BadRequestError(), status: 400, error: 'Bad Request', message: 'Bad Request' },
  { cls: UnauthorizedError, make: () => new UnauthorizedError(), status: 401, error: 'Unauthorized', message: 'Bad Credentials' },
  {
    cls: ForbiddenError,
    make: () => new ForbiddenError(),
    status: 403,
    error: 'Forbidden',
    message: 'You are not allowed to perform this operation',
  },
  { cls: NotFoundError, make: () => new NotFoundError('No user 42'), status: 404, error: 'Not Found', message: 'No user 42' },
  {
    cls: MethodNotAllowedError,
    make: () => new MethodNotAllowedError('PUT', ['GET', 'POST']),
    status: 405,
    error: 'Method Not Allowed',
    message: 'Method PUT is not allowed here; allowed: GET, POST',
    headers: { allow: 'GET, POST' },
  },
  { cls: ConflictError, make: () => new ConflictError(), status: 409, error: 'Conflict', message: 'Conflict' },
  {
    cls: PayloadTooLargeError,
    make: () => new PayloadTooLargeError(),
    status: 413,
    error: 'Payload Too Large',
    message: 'Request body is too large',
  },
  {
    cls: UnsupportedMediaTypeError,
    make: () => new UnsupportedMediaTypeError(),
    status: 415,
    error: 'Unsupported Media Type',
    message: 'Unsupported Content-Type; send application/json',
  },
  {
    cls: TooManyRequestsError,
    make: () => new TooManyRequestsError('Too many failed logins', 2.1),
    status: 429,
    error: 'Too Many Requests',
    message: 'Too many failed logins',
    headers: { 'retry-after': '3' },
  },
  {
    cls: InternalServerError,
    make: () => new InternalServerError(),
    status: 500,
    error: 'Internal Server Error',
    message: INTERNAL_ERROR_MESSAGE,
  },
  {
    cls: NotImplementedError,
    make: () => new NotImplementedError(),
    status: 501,
    error: 'Not Implemented',
    message: 'This operation is not available yet',
  },
  { cls: BadGatewayError, make: () => new BadGatewayError(), status: 502, error: 'Bad Gateway', message: 'Upstream service unavailable' },
  {
    cls: ServiceUnavailableError,
    make: () => new ServiceUnavailableError(),
    status: 503,
    error: 'Service Unavailable',
    message: 'Service temporarily unavailable',
  },
  {
    cls: GatewayTimeoutError,
    make: () => new GatewayTimeoutError(),
    status: 504,
    error: 'Gateway Timeout',
    message: 'Upstream service timed out',
  },
];

describe('errorHandler', () => {
  it('has a case below for every error class @platform/errors exports', () => {
    const exported = Object.values(errors).filter(
      (value) => typeof value === 'function' && (value as { prototype?: unknown }).prototype instanceof Error,
    );
    assert.deepEqual(new Set(exported), new Set(errorCases.map((c) => c.cls)));
  });

  for (const c of errorCases) {
    const name = (c.cls as { name: string }).name;
    it(`when a route throws ${name}, answers ${c.status} ${c.error} in the error shape with the full request URI as path`, async () => {
      const seen: LoggedError = { finished: false };
      const thrown = c.make();
      const res = await request(appThrowing(thrown, seen)).get('/boom?page=2&sort=name');
      assertErrorBody(res, { status: c.status, error: c.error, message: c.message, path: '/boom?page=2&sort=name' });
      for (const [header, value] of Object.entries(c.headers ?? {})) assert.equal(res.headers[header], value);
      assert.equal(seen.finished, true);
      // Only a 5xx is a fault worth a stack in the log; without a cause the error itself is logged. A 503
      // thrown without a cause is a refusal the process chose: its message, no stack.
      const refusal = c.status === 503;
      assert.equal(seen.err, c.status >= 500 && !refusal ? thrown : undefined);
      assert.equal(seen.refusal, refusal ? c.message : undefined);
    });
  }

  it('on the requests `oauth` picks, answers a 400 in RFC 6749 §5.2\'s shape, never cached, and every other status in SPEC.md\'s', async () => {
    const oauth = { oauth: (req: express.Request) => req.query.oauth === '1' };
    const res = await request(appThrowing(new BadRequestError('token is missing'), { finished: false }, oauth)).get('/boom?oauth=1');
    assert.equal(res.status, 400);
    assert.deepEqual(res.body, { error: 'invalid_request', error_description: 'token is missing' });
    assert.equal(res.headers['cache-control'], 'no-store');
    for (const thrown of [new ServiceUnavailableError('restoring'), new Error('SELECT * FROM secrets')]) {
      const other = await request(appThrowing(thrown, { finished: false }, oauth)).get('/boom?oauth=1');
      assert.equal(typeof other.body.timestamp, 'string', JSON.stringify(other.body));
      assert.equal(other.body.path, '/boom?oauth=1');
      assert.doesNotMatch(other.text, /SELECT/);
    }
    // A 415: of a body of another type, SPEC.md's, naming the type taken; of no body at all, a malformed request (its token is missing).
    const typed = await request(appThrowing(new UnsupportedMediaTypeError(), { finished: false }, oauth)).get('/boom?oauth=1').set('content-type', 'application/json').send('{}');
    assertErrorBody(typed, { status: 415, error: 'Unsupported Media Type', message: 'Unsupported Content-Type; send application/x-www-form-urlencoded', path: '/boom?oauth=1' });
    const bare = await request(appThrowing(new UnsupportedMediaTypeError(), { finished: false }, oauth)).get('/boom?oauth=1');
    assert.equal(bare.status, 400);
    assert.deepEqual(bare.body, { error: 'invalid_request', error_description: 'The request has no body; send the form field token as application/x-www-form-urlencoded' });
    assert.equal(bare.headers['cache-control'], 'no-store');
    // Elsewhere, a 415 of no body stays SPEC.md's.
    assertErrorBody(await request(appThrowing(new UnsupportedMediaTypeError('x'), { finished: false }, oauth)).get('/boom'), { status: 415, error: 'Unsupported Media Type', message: 'x', path: '/boom' });
    // Any other request keeps SPEC.md's shape.
    const other = await request(appThrowing(new BadRequestError('x'), { finished: false }, oauth)).get('/boom');
    assertErrorBody(other, { status: 400, error: 'Bad Request', message: 'x', path: '/boom' });
  });

  it('when the error is neither a 405 nor a 429, sends neither Allow nor Retry-After', async () => {
    const res = await request(appThrowing(new ConflictError())).get('/boom');
    assert.equal(res.status, 409);
    assert.equal(res.headers.allow, undefined);
    assert.equal(res.headers['retry-after'], undefined);
  });

  it('when an error carries headers of its own, sends them', async () => {
    const res = await request(appThrowing(new UnauthorizedError(undefined, { headers: { 'WWW-Authenticate': 'Bearer' } }))).get('/boom');
    assertErrorBody(res, { status: 401, error: 'Unauthorized', message: 'Bad Credentials', path: '/boom' });
    assert.equal(res.headers['www-authenticate'], 'Bearer');
  });

  it('when TooManyRequestsError gets a fraction, zero or a negative wait, Retry-After is rounded up and at least 1', async () => {
    for (const [seconds, header] of [
      [0.2, '1'],
      [0, '1'],
      [-5, '1'],
      [59.001, '60'],
      [60, '60'],
      [Number.NaN, '1'],
      [Number.POSITIVE_INFINITY, '1'],
    ] as const) {
      const res = await request(appThrowing(new TooManyRequestsError('Slow down', seconds))).get('/boom');
      assert.equal(res.status, 429);
      assert.equal(res.headers['retry-after'], header, `for ${seconds} s`);
    }
  });

  it('when a 405 and a 429 keep extra headers passed in options, sends them beside Allow and Retry-After', async () => {
    const res405 = await request(appThrowing(new MethodNotAllowedError('PUT', ['GET'], { headers: { 'X-Hint': 'a' } }))).get('/boom');
    assert.equal(res405.headers.allow, 'GET');
    assert.equal(res405.headers['x-hint'], 'a');
    const res429 = await request(appThrowing(new TooManyRequestsError('Slow down', 7, { headers: { 'X-Hint': 'b' } }))).get('/boom');
    assert.equal(res429.headers['retry-after'], '7');
    assert.equal(res429.headers['x-hint'], 'b');
  });

  it('when the error names no problems, leaves messages out by default', async () => {
    const res = await request(appThrowing(new ConflictError('Username taken'))).get('/boom');
    assert.equal('messages' in res.body, false);
  });

  it("with messages: 'always', fills messages with the message when the error names no problems", async () => {
    const res = await request(appThrowing(new NotFoundError('No station 7'), { finished: false }, { messages: 'always' })).get('/boom');
    assertErrorBody(res, { status: 404, error: 'Not Found', message: 'No station 7', messages: ['No station 7'], path: '/boom' });
  });

  it("with messages: 'always', a 500 carries the fixed message in messages too", async () => {
    const res = await request(appThrowing(new Error('db down'), { finished: false }, { messages: 'always' })).get('/boom');
    assertErrorBody(res, {
      status: 500,
      error: 'Internal Server Error',
      message: INTERNAL_ERROR_MESSAGE,
      messages: [INTERNAL_ERROR_MESSAGE],
      path: '/boom',
    });
  });

  it('when the error carries messages, keeps them as they are, with and without the always option', async () => {
    const thrown = (): BadRequestError =>
      new BadRequestError('name is too short; count must be >= 1', { messages: ['name is too short', 'count must be >= 1'] });
    for (const options of [undefined, { messages: 'always' } as const, { messages: 'when-present' } as const]) {
      const res = await request(appThrowing(thrown(), { finished: false }, options)).get('/boom');
      assertErrorBody(res, {
        status: 400,
        error: 'Bad Request',
        message: 'name is too short; count must be >= 1',
        messages: ['name is too short', 'count must be >= 1'],
        path: '/boom',
      });
    }
  });

  it('when an async handler throws a string, answers 500 with the fixed message and logs the string', async () => {
    const seen: LoggedError = { finished: false };
    const app = appWithRoute(async () => {
      await Promise.resolve();
      throw 'boom';
    }, seen);
    const res = await request(app).get('/boom');
    assertErrorBody(res, { status: 500, error: 'Internal Server Error', message: INTERNAL_ERROR_MESSAGE, path: '/boom' });
    assert.equal(seen.err, 'boom');
  });

  it('when an async handler throws a plain object, answers 500 with the fixed message and none of the object', async () => {
    const seen: LoggedError = { finished: false };
    const thrown = { sql: 'SELECT 1' };
    const app = appWithRoute(async () => {
      await Promise.resolve();
      throw thrown;
    }, seen);
    const res = await request(app).get('/boom');
    assertErrorBody(res, { status: 500, error: 'Internal Server Error', message: INTERNAL_ERROR_MESSAGE, path: '/boom' });
    assert.ok(!res.text.includes('SELECT'));
    assert.equal(seen.err, thrown);
  });

  it('when an async handler throws null, answers 500 with the fixed message', async () => {
    const app = appWithRoute(async () => {
      await Promise.resolve();
      throw null;
    }, { finished: false });
    const res = await request(app).get('/boom');
    assertErrorBody(res, { status: 500, error: 'Internal Server Error', message: INTERNAL_ERROR_MESSAGE, path: '/boom' });
  });

  it('when a sync handler throws a string, answers 500 with the fixed message', async () => {
    const res = await request(appThrowing('kaboom')).get('/boom');
    assertErrorBody(res, { status: 500, error: 'Internal Server Error', message: INTERNAL_ERROR_MESSAGE, path: '/boom' });
    assert.ok(!res.text.includes('kaboom'));
  });

  it('when a handler fails with SQL in the error, answers 500 without the SQL or a stack and hands the error to the logger', async () => {
    const seen: LoggedError = { finished: false };
    const thrown = new Error("SELECT * FROM users WHERE password = 'hunter2'");
    const app = appWithRoute((_req, _res, next) => next(thrown), seen);
    const res = await request(app).get('/boom?id=1');
    assertErrorBody(res, { status: 500, error: 'Internal Server Error', message: INTERNAL_ERROR_MESSAGE, path: '/boom?id=1' });
    assert.ok(!res.text.includes('SELECT'));
    assert.ok(!res.text.includes('hunter2'));
    assert.ok(!/\bat /.test(res.text), 'no stack line');
    assert.equal(seen.err, thrown);
  });

  it('when an HttpError names a cause, the cause goes to the logger and never to the client', async () => {
    const seen: LoggedError = { finished: false };
    const cause = new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2');
    const res = await request(appThrowing(new ServiceUnavailableError(undefined, { cause }), seen)).get('/boom');
    assertErrorBody(res, { status: 503, error: 'Service Unavailable', message: 'Service temporarily unavailable', path: '/boom' });
    assert.ok(!res.text.includes('hunter2'));
    assert.equal(seen.err, cause);
  });

  it('every 503 carries Retry-After (1 s unless the error names another wait): a retry can cure it', async () => {
    const seen: LoggedError = { finished: false };
    assert.equal((await request(appThrowing(new ServiceUnavailableError(), seen)).get('/boom')).headers['retry-after'], '1');
    assert.equal((await request(appThrowing(new ServiceUnavailableError('Draining', { retryAfterSeconds: 2.2 }), seen)).get('/boom')).headers['retry-after'], '3');
    // A dependency that went away, mapped to 503 by the one error mapping.
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' });
    const res = await request(appThrowing(refused, seen)).get('/boom');
    assert.equal(res.status, 503);
    assert.equal(res.headers['retry-after'], '1');
  });

  it('when a 4xx names a cause, nothing is handed to the logger as a fault', async () => {
    const seen: LoggedError = { finished: false };
    const res = await request(appThrowing(new BadRequestError('bad', { cause: new Error('inner') }), seen)).get('/boom');
    assert.equal(res.status, 400);
    assert.equal(seen.err, undefined);
  });

  it('when the error comes after the headers were sent, writes no second body and lets Express end the connection', async () => {
    const seen: LoggedError = { finished: false };
    const app = appWithRoute((_req, res, next) => {
      res.write('partial');
      // Give the chunk time to reach the client before the connection is torn down.
      setTimeout(() => next(new Error('failed mid-stream')), 50);
    }, seen);
    const server = app.listen(0);
    try {
      await new Promise<void>((resolve) => server.once('listening', resolve));
      const { port } = server.address() as AddressInfo;
      const outcome = await new Promise<{ status: number | undefined; body: string; aborted: boolean; completed: boolean }>((resolve) => {
        const req = httpRequest({ port, path: '/boom', method: 'GET' }, (res) => {
          let body = '';
          let aborted = false;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            body += chunk;
          });
          res.on('aborted', () => {
            aborted = true;
          });
          res.on('error', () => {
            aborted = true;
          });
          res.on('close', () => resolve({ status: res.statusCode, body, aborted, completed: res.complete }));
        });
        req.on('error', () => resolve({ status: undefined, body: '', aborted: true, completed: false }));
        req.end();
      });
      // Express 5 destroys the socket: the client gets the partial body and then a cut connection.
      assert.equal(outcome.status, 200);
      assert.equal(outcome.body, 'partial');
      assert.equal(outcome.aborted, true);
      assert.equal(outcome.completed, false);
      assert.equal(seen.finished, false);
    } finally {
      server.close();
    }
  });
});

describe('notFoundHandler', () => {
  it('when no route takes the request, answers 404 naming the method and path, with the query kept in path', async () => {
    const res = await request(appThrowing(new Error('unused'))).get('/x?y=1');
    assertErrorBody(res, { status: 404, error: 'Not Found', message: 'No route for GET /x', path: '/x?y=1' });
  });

  it('inside a mounted router, names the full path', async () => {
    const app = express();
    const router = express.Router();
    router.use(errors.notFoundHandler);
    app.use('/v1', router);
    app.use(errors.errorHandler());
    const res = await request(app).get('/v1/x');
    assertErrorBody(res, { status: 404, error: 'Not Found', message: 'No route for GET /v1/x', path: '/v1/x' });
  });

  it('names the method that was used', async () => {
    const res = await request(appThrowing(new Error('unused'))).post('/nowhere/else');
    assertErrorBody(res, { status: 404, error: 'Not Found', message: 'No route for POST /nowhere/else', path: '/nowhere/else' });
  });
});

describe('methodNotAllowedHandler', () => {
  function appWithRouteR(): Express {
    const app = express();
    const router = express.Router();
    const ok: RequestHandler = (req, res) => {
      res.json({ method: req.method });
    };
    router.route('/r').get(ok).post(ok).all(methodNotAllowedHandler);
    app.use(router);
    app.use(notFoundHandler);
    app.use(errorHandler());
    return app;
  }

  it('when the method is not one the route answers, answers 405 with Allow listing GET, POST and HEAD', async () => {
    const res = await request(appWithRouteR()).delete('/r?force=true');
    assert.equal(res.status, 405);
    const allow = String(res.headers.allow).split(/\s*,\s*/);
    assert.equal(allow.length, 3);
    assert.deepEqual(new Set(allow), new Set(['GET', 'POST', 'HEAD']));
    assertErrorBody(res, {
      status: 405,
      error: 'Method Not Allowed',
      message: `Method DELETE is not allowed here; allowed: ${allow.join(', ')}`,
      path: '/r?force=true',
    });
  });

  it('lets the methods the route answers through', async () => {
    const app = appWithRouteR();
    const get = await request(app).get('/r');
    assert.equal(get.status, 200);
    assert.deepEqual(get.body, { method: 'GET' });
    const post = await request(app).post('/r');
    assert.equal(post.status, 200);
    assert.deepEqual(post.body, { method: 'POST' });
    const head = await request(app).head('/r');
    assert.equal(head.status, 200);
  });

  it('on a route without GET, lists no HEAD', async () => {
    const app = express();
    app.route('/only-post').post((_req, res) => {
      res.end();
    }).all(methodNotAllowedHandler);
    app.use(errorHandler());
    const res = await request(app).put('/only-post');
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'POST');
  });
});

describe('errorHandler with express.json', () => {
  function jsonApp(): Express {
    const app = express();
    app.use(express.json({ limit: '1kb' }));
    app.post('/echo', (req, res) => {
      res.json(req.body as unknown);
    });
    app.use(notFoundHandler);
    app.use(errorHandler());
    return app;
  }

  it('when the body is well-formed JSON, the route gets it', async () => {
    const res = await request(jsonApp()).post('/echo').send({ a: 1 });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { a: 1 });
  });

  it('when the body is malformed JSON, answers 400 Request body is not valid JSON', async () => {
    const res = await request(jsonApp()).post('/echo?v=1').set('Content-Type', 'application/json').send('{"a": 1,');
    assertErrorBody(res, { status: 400, error: 'Bad Request', message: 'Request body is not valid JSON', path: '/echo?v=1' });
    assert.ok(!res.text.includes('Unexpected'), 'the parser text is not echoed');
  });

  it('when the body is larger than the limit, answers 413 naming the limit', async () => {
    const res = await request(jsonApp())
      .post('/echo')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ pad: 'x'.repeat(2048) }));
    assertErrorBody(res, {
      status: 413,
      error: 'Payload Too Large',
      message: 'Request body is larger than 1024 bytes',
      path: '/echo',
    });
  });

  it('when the charset is not one JSON can be read in, answers 415', async () => {
    const res = await request(jsonApp()).post('/echo').set('Content-Type', 'application/json; charset=latin9-nonsense').send('{"a":1}');
    assertErrorBody(res, {
      status: 415,
      error: 'Unsupported Media Type',
      message: 'Unsupported body encoding or charset; send UTF-8 JSON',
      path: '/echo',
    });
  });

  it('when the Content-Encoding is unknown, answers 415', async () => {
    const res = await request(jsonApp()).post('/echo').set('Content-Type', 'application/json').set('Content-Encoding', 'bogus').send('{"a":1}');
    assertErrorBody(res, {
      status: 415,
      error: 'Unsupported Media Type',
      message: 'Unsupported body encoding or charset; send UTF-8 JSON',
      path: '/echo',
    });
  });
});
