import assert from 'node:assert/strict';
import { type ErrorBody, isErrorBody, parseUpstreamError } from '../src/index.ts';

/** The timestamp is "now": ISO 8601 and within a few seconds of the clock. */
function assertNow(timestamp: string): void {
  const when = Date.parse(timestamp);
  assert.equal(new Date(when).toISOString(), timestamp);
  assert.ok(Math.abs(Date.now() - when) < 5000, `${timestamp} is not now`);
}

/** Checks the result is a well-formed body with only the keys of the shape, and returns it. */
function parsed(status: number, raw: unknown, path: string, fallbackMessage?: string): ErrorBody {
  const body = parseUpstreamError(status, raw, path, fallbackMessage);
  assert.ok(isErrorBody(body), `not an error body: ${JSON.stringify(body)}`);
  for (const key of Object.keys(body)) {
    assert.ok(['timestamp', 'status', 'error', 'message', 'messages', 'path'].includes(key), `unexpected key ${key}`);
  }
  return body;
}

describe('parseUpstreamError', () => {
  it('when the upstream sent our own shape, keeps its message, messages and timestamp but takes status, error and path from the call', () => {
    const upstream = JSON.stringify({
      timestamp: '2024-05-06T07:08:09.123Z',
      status: 418,
      error: 'Teapot',
      message: 'No user 42',
      messages: ['No user 42', 'Check the id'],
      path: '/internal/users/42',
    });
    assert.deepEqual(parsed(404, upstream, '/v1/users/42?x=1'), {
      timestamp: '2024-05-06T07:08:09.123Z',
      status: 404,
      error: 'Not Found',
      message: 'No user 42',
      messages: ['No user 42', 'Check the id'],
      path: '/v1/users/42?x=1',
    });
  });

  it('reads the same body from a Buffer and from an already parsed object', () => {
    const upstream = { timestamp: '2024-05-06T07:08:09.123Z', status: 409, error: 'Conflict', message: 'Username taken', path: '/u' };
    const expected = { timestamp: '2024-05-06T07:08:09.123Z', status: 409, error: 'Conflict', message: 'Username taken', path: '/v1/u' };
    assert.deepEqual(parsed(409, Buffer.from(JSON.stringify(upstream), 'utf8'), '/v1/u'), expected);
    assert.deepEqual(parsed(409, upstream, '/v1/u'), expected);
  });

  it('never copies fields outside the shape, such as a stack or SQL', () => {
    const body = parsed(500, { message: 'Oops', stack: 'Error: x\n    at f (a.js:1:1)', sql: 'SELECT 1' }, '/p');
    assert.deepEqual(Object.keys(body).sort(), ['error', 'message', 'path', 'status', 'timestamp']);
    assert.equal(body.message, 'Oops');
    assert.equal(body.error, 'Internal Server Error');
  });

  it('when the upstream sent RFC 9457 problem details, uses detail as the message', () => {
    const problem = JSON.stringify({
      type: 'https://example.com/probs/out-of-credit',
      title: 'You do not have enough credit.',
      detail: 'Your current balance is 30, but that costs 50.',
      status: 403,
      instance: '/account/12345/msgs/abc',
    });
    const body = parsed(403, problem, '/v1/accounts/12345');
    assert.equal(body.status, 403);
    assert.equal(body.error, 'Forbidden');
    assert.equal(body.message, 'Your current balance is 30, but that costs 50.');
    assert.equal(body.path, '/v1/accounts/12345');
    assert.equal(body.messages, undefined);
    assertNow(body.timestamp);
  });

  it('when problem details have only a title, uses the title', () => {
    const body = parsed(400, JSON.stringify({ type: 'about:blank', title: 'Invalid input', status: 400 }), '/v1/x');
    assert.equal(body.message, 'Invalid input');
    assert.equal(body.error, 'Bad Request');
  });

  it('when the upstream sent { error: text }, uses the text as the message and the status reason as error', () => {
    const body = parsed(401, '{"error":"invalid_token"}', '/v1/me');
    assert.deepEqual(body, { timestamp: body.timestamp, status: 401, error: 'Unauthorized', message: 'invalid_token', path: '/v1/me' });
    assertNow(body.timestamp);
  });

  it('when the upstream sent { errors: [{ message }] }, lists every message and uses the first as the message', () => {
    const body = parsed(422, JSON.stringify({ errors: [{ message: 'name is required' }, { message: 'age must be positive' }] }), '/v1/p');
    assert.equal(body.status, 422);
    assert.equal(body.error, 'Unprocessable Entity');
    assert.equal(body.message, 'name is required');
    assert.deepEqual(body.messages, ['name is required', 'age must be positive']);
  });

  it('prefers messages over errors when both are present', () => {
    const body = parsed(400, { messages: ['from messages'], errors: ['from errors'] }, '/p');
    assert.deepEqual(body.messages, ['from messages']);
    assert.equal(body.message, 'from messages');
  });

  for (const [what, raw] of [
    ['plain text', 'upstream exploded: password=hunter2'],
    ['HTML', '<html><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>'],
    ['an empty string', ''],
    ['a Buffer of text', Buffer.from('Service Unavailable from the load balancer', 'utf8')],
    ['undefined', undefined],
    ['null', null],
    ['a JSON array', '[{"message":"inside an array"},"text"]'],
    ['an array', [{ message: 'inside an array' }]],
    ['a JSON number', '42'],
    ['a number', 42],
    ['a JSON string', '"just a string"'],
  ] as const) {
    it(`when the upstream sent ${what}, answers the reason phrase of the status, without the upstream text`, () => {
      const body = parsed(502, raw, '/v1/stations?q=a');
      assert.deepEqual(body, {
        timestamp: body.timestamp,
        status: 502,
        error: 'Bad Gateway',
        message: 'Bad Gateway',
        path: '/v1/stations?q=a',
      });
      assertNow(body.timestamp);
    });
  }

  it('when nothing readable was sent and a fallback message is given, uses the fallback', () => {
    const body = parsed(504, '<html>timeout</html>', '/v1/x', 'Upstream service timed out');
    assert.equal(body.message, 'Upstream service timed out');
    assert.equal(body.error, 'Gateway Timeout');
  });

  it('when a body field is readable, it wins over the fallback', () => {
    const body = parsed(503, { message: 'Draining' }, '/v1/x', 'Upstream service unavailable');
    assert.equal(body.message, 'Draining');
  });

  it('when the message is blank or not a string, falls through to the next field', () => {
    assert.equal(parsed(400, { message: '   ', detail: 'the detail' }, '/p').message, 'the detail');
    assert.equal(parsed(400, { message: 17, title: 'the title' }, '/p').message, 'the title');
    assert.equal(parsed(400, { message: null, error: { code: 1 }, errors: [{ message: 'first' }] }, '/p').message, 'first');
  });

  it('trims the message', () => {
    assert.equal(parsed(400, { message: '  padded \n' }, '/p').message, 'padded');
  });

  it('when the message is over 1000 characters, truncates it to 1000 plus an ellipsis', () => {
    const body = parsed(400, { message: 'a'.repeat(5000) }, '/p');
    assert.equal(body.message.length, 1001);
    assert.equal(body.message, `${'a'.repeat(1000)}…`);
  });

  it('when the message is exactly 1000 characters, keeps it whole', () => {
    const body = parsed(400, { message: 'b'.repeat(1000) }, '/p');
    assert.equal(body.message, 'b'.repeat(1000));
  });

  it('truncates each long entry of messages too', () => {
    const body = parsed(400, { messages: ['c'.repeat(2000), 'short'] }, '/p');
    assert.deepEqual(body.messages, [`${'c'.repeat(1000)}…`, 'short']);
  });

  it('when more than 50 messages were sent, keeps the first 50', () => {
    const sent = Array.from({ length: 80 }, (_, i) => `problem ${i}`);
    const body = parsed(400, { messages: sent }, '/p');
    assert.equal(body.messages?.length, 50);
    assert.deepEqual(body.messages, sent.slice(0, 50));
  });

  it('drops entries of messages that are not text', () => {
    const body = parsed(400, { messages: [1, null, 'ok', { message: 2 }, { message: 'from object' }, '   ', true, ['nested'], undefined] }, '/p');
    assert.deepEqual(body.messages, ['ok', 'from object']);
    assert.equal(body.message, 'ok');
  });

  it('when no entry of messages is text, leaves messages out', () => {
    const body = parsed(400, { messages: [1, null, {}], message: 'Invalid' }, '/p');
    assert.equal('messages' in body, false);
    assert.equal(body.message, 'Invalid');
  });

  it('when messages is not an array, ignores it', () => {
    const body = parsed(400, { messages: 'not a list', message: 'Invalid' }, '/p');
    assert.equal('messages' in body, false);
  });

  it('when the timestamp is not a date, replaces it with now', () => {
    for (const timestamp of ['yesterday-ish', '', 1_700_000_000_000, null]) {
      const body = parsed(400, { timestamp, message: 'x' }, '/p');
      assertNow(body.timestamp);
    }
  });

  it('when the timestamp is a date in another format, rewrites it as ISO 8601', () => {
    const body = parsed(400, { timestamp: 'Mon, 06 May 2024 07:08:09 GMT', message: 'x' }, '/p');
    assert.equal(body.timestamp, '2024-05-06T07:08:09.000Z');
  });

  it('for a status Node has no reason phrase for, says Error', () => {
    const body = parsed(599, 'nothing', '/p');
    assert.equal(body.status, 599);
    assert.equal(body.error, 'Error');
    assert.equal(body.message, 'Error');
  });
});
