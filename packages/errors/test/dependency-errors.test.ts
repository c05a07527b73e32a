import assert from 'node:assert/strict';
import { isDependencyUnavailable, toHttpError } from '../src/index.ts';

/** An Error with the extra fields client libraries set. */
function libraryError(message: string, fields: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(message), fields);
}

describe('toHttpError: faults of dependencies and of the router', () => {
  const unavailable: Array<[string, unknown]> = [
    ['Postgres refuses connections', libraryError('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' })],
    ['Postgres resets the connection', libraryError('read ECONNRESET', { code: 'ECONNRESET' })],
    ['the pool is exhausted (knex)', libraryError('Knex: Timeout acquiring a connection. The pool is probably full.', { name: 'KnexTimeoutError' })],
    ['pg gives up on a silent server', libraryError('Query read timeout')],
    ['pg cannot connect in time', libraryError('Connection terminated due to connection timeout')],
    ['the connection dies mid-query', libraryError('Connection terminated unexpectedly')],
    ['statement_timeout', libraryError('canceling statement due to statement timeout', { code: '57014' })],
    ['the server shuts down', libraryError('terminating connection due to administrator command', { code: '57P01' })],
    ['the server is starting', libraryError('the database system is starting up', { code: '57P03' })],
    ['connection exception class 08', libraryError('connection failure', { code: '08006' })],
    ['a transaction deadlocked with another', libraryError('deadlock detected', { code: '40P01' })],
    ['a serializable transaction lost a race', libraryError('could not serialize access due to concurrent update', { code: '40001' })],
    ['Redis is frozen (ioredis)', libraryError('Command timed out')],
    ['Redis is down (ioredis, no offline queue)', libraryError("Stream isn't writeable and enableOfflineQueue options is false")],
    ['a Redis connection came back and its server was not identified in time (service-kit)', libraryError('the Redis server of a connection that came back was not identified in time', { name: 'RedisServerUnknownError' })],
    ['Redis retries exhausted', libraryError('Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.', { name: 'MaxRetriesPerRequestError' })],
  ];
  for (const [name, err] of unavailable) {
    it(`when ${name}, answers 503 (retry later), never 500`, () => {
      assert.equal(isDependencyUnavailable(err), true);
      assert.equal(toHttpError(err).status, 503);
      assert.equal(toHttpError(err).message, 'Service temporarily unavailable');
      assert.equal(toHttpError(err).headers['Retry-After'], '1');
    });
  }

  it('when the fault is a bug (a constraint, a syntax error, anything else), still answers 500', () => {
    for (const err of [libraryError('duplicate key', { code: '23505' }), libraryError('syntax error', { code: '42601' }), new TypeError('x is undefined'), 'a string']) {
      assert.equal(isDependencyUnavailable(err), false);
      assert.equal(toHttpError(err).status, 500);
    }
  });

  it('when the router cannot decode the path (a URIError with status 400), answers 400 with fixed text', () => {
    const err = Object.assign(new URIError("Failed to decode param '%ZZ'"), { status: 400 });
    const mapped = toHttpError(err);
    assert.equal(mapped.status, 400);
    assert.equal(mapped.message, 'The request path is not valid percent-encoding');
  });

  it('when the validator cannot decode the path (its `malformed uri\'`), answers 400 with the same text, not the validator\'s', () => {
    const mapped = toHttpError({ status: 400, errors: [{ path: '/v1/weather-stations/by/id/1%', message: "malformed uri'" }] });
    assert.equal(mapped.status, 400);
    assert.equal(mapped.message, 'The request path is not valid percent-encoding');
    assert.deepEqual(mapped.messages, ['The request path is not valid percent-encoding']);
  });

  it('when an http-errors client error (expose) is thrown, keeps its status with the reason phrase, never its own text', () => {
    const mapped = toHttpError(Object.assign(new Error('internal detail'), { statusCode: 416, expose: true }));
    assert.equal(mapped.status, 416);
    assert.equal(mapped.message, 'Range Not Satisfiable');
    assert.equal(toHttpError(Object.assign(new Error('x'), { status: 502, expose: true })).status, 500, 'only 4xx are taken as given');
  });

  it('when some other error merely has a status (an HTTP client\'s, about another server), it stays a 500', () => {
    assert.equal(toHttpError(Object.assign(new Error('Request failed with status code 404'), { status: 404 })).status, 500);
  });
});
