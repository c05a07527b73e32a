import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createMailer } from '../src/notifications/mailer.ts';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

type Line = Record<string, unknown> & { msg?: string; traceId?: string; req?: { id?: string } };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A `traceparent` of a new trace, as the gateway forwards it (CONTRACT.md part 12), and its trace id. */
function newTrace(): { traceparent: string; traceId: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, traceId };
}

// CONTRACT.md part 12: the trace id is on every line a process writes while handling a request, not only
// on its request line: also on the lines of code that is not handed the request (the block after failed
// logins, a session ended at refresh, the mailer and the SMS sender), and on those written after the answer.
describe('the lines identity logs while handling a request carry its request id and trace id', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity();
  });
  after(async () => {
    await identity.close();
  });

  /**
   * Every line written from `from` on, once one says `last` (lines written after the answer come late):
   * the requests of each test run one at a time, so these are the lines of the request under test.
   */
  async function linesUntil(from: number, last: string): Promise<Line[]> {
    for (const deadline = Date.now() + 3000; ; await sleep(10)) {
      const lines = identity.log.lines().slice(from) as Line[];
      if (lines.some((l) => l.msg === last)) return lines;
      assert.ok(Date.now() < deadline, `no line "${last}" in ${JSON.stringify(lines)}`);
    }
  }
  /** `lines` are exactly the `expected` messages, each with the request's id and trace id. */
  function assertAllOf(lines: Line[], requestId: string | undefined, traceId: string, expected: string[]): void {
    assert.ok(requestId);
    assert.deepEqual(lines.map((l) => l.msg).sort(), [...expected].sort());
    for (const line of lines) assert.deepEqual([line.msg, line.req?.id, line.traceId], [line.msg, requestId, traceId]);
  }

  it('the login that blocks a user: the block, the request line, and the mail to the owner sent after the answer', async () => {
    const user = await identity.createUser();
    const login = (password: string) => request(identity.app).post('/v1/auth/login').send({ username: user.username, password });
    for (let i = 1; i <= 5; i += 1) assert.equal((await login(`wrong-${i}`)).status, 401);
    const mails = identity.mail.received.length;
    const from = identity.log.lines().length;
    const { traceparent, traceId } = newTrace();
    const res = await login('wrong-6').set('traceparent', traceparent);
    assert.equal(res.status, 401);
    await identity.mail.waitFor(mails + 1);
    const lines = await linesUntil(from, 'e-mail sent');
    assertAllOf(lines, res.headers['x-request-id'], traceId, ['user blocked after repeated failed logins', 'POST 401', 'e-mail sent']);
  });

  it('a refresh that ends the session (its rotated token presented again): the end of the session and the request line', async () => {
    const tokens = await identity.login(await identity.createUser());
    assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: tokens.refreshToken })).status, 200);
    const from = identity.log.lines().length;
    const { traceparent, traceId } = newTrace();
    const res = await request(identity.app).post('/v1/auth/refresh').set('traceparent', traceparent).send({ refreshToken: tokens.refreshToken });
    assert.equal(res.status, 401);
    assertAllOf(await linesUntil(from, 'POST 401'), res.headers['x-request-id'], traceId, ['session ended at refresh', 'POST 401']);
  });

  it('an activation SMS the provider refuses: the failed delivery and the request line', async () => {
    const user = await identity.createUser();
    const { accessToken } = await identity.login(user);
    const account = await request(identity.app)
      .post('/v1/accounts/create')
      .set('Authorization', `Bearer ${accessToken}`)
      .send({ userId: user.id, type: 'INDIVIDUAL', mobilePhoneNumber: '+905321234568' });
    assert.equal(account.status, 201);
    identity.sms.answerWith(503);
    try {
      const from = identity.log.lines().length;
      const { traceparent, traceId } = newTrace();
      const res = await request(identity.app)
        .post('/v1/accounts/phone-number-activation-request')
        .set('Authorization', `Bearer ${accessToken}`)
        .set('traceparent', traceparent)
        .send({ userId: user.id, accountId: account.body.id, phoneNumberActivationPageLink: 'http://localhost:3000/activate' });
      assert.deepEqual([res.status, res.body.smsSent], [200, false]);
      assertAllOf(await linesUntil(from, 'POST 200'), res.headers['x-request-id'], traceId, ['SMS not sent', 'POST 200']);
    } finally {
      identity.sms.answerWith(200);
    }
  });

  it('a password reset request: the reset link mailed after the 202 carries the trace id of the request that asked for it', async () => {
    const user = await identity.createUser();
    const from = identity.log.lines().length;
    const { traceparent, traceId } = newTrace();
    const res = await request(identity.app).post('/v1/users/password-reset-request').set('traceparent', traceparent).send({ username: user.username });
    assert.equal(res.status, 202);
    assertAllOf(await linesUntil(from, 'e-mail sent'), res.headers['x-request-id'], traceId, ['POST 202', 'e-mail sent']);
  });

  it('two reset requests queued together: each mail line carries the trace id of its own request, not of the first', async () => {
    const users = [await identity.createUser(), await identity.createUser()];
    const mails = identity.mail.received.length;
    const from = identity.log.lines().length;
    const traces = [newTrace(), newTrace()];
    // Back to back: both wait in the reset work queue and are drained by one timer, started by the first.
    const answers = [];
    for (const [i, user] of users.entries()) {
      answers.push(await request(identity.app).post('/v1/users/password-reset-request').set('traceparent', traces[i]!.traceparent).send({ username: user.username }));
    }
    assert.deepEqual(answers.map((res) => res.status), [202, 202]);
    await identity.mail.waitFor(mails + 2);
    const sent = (await linesUntil(from, 'e-mail sent')).filter((line) => line.msg === 'e-mail sent');
    for (const deadline = Date.now() + 3000; sent.length < 2 && Date.now() < deadline; await sleep(10)) {
      sent.splice(0, sent.length, ...(identity.log.lines().slice(from) as Line[]).filter((line) => line.msg === 'e-mail sent'));
    }
    assert.deepEqual(
      sent.map((line) => [line.req?.id, line.traceId]).sort(),
      answers.map((res, i) => [res.headers['x-request-id'], traces[i]!.traceId]).sort(),
    );
  });

  it('a mail sent outside of any request is logged without a request id or trace id', async () => {
    const mailer = createMailer({ provider: 'http', url: identity.mail.url, timeoutMs: 1000 }, identity.log.logger);
    const from = identity.log.lines().length;
    assert.equal(await mailer.send({ to: 'someone@example.com', subject: 'Outside', text: 'no request' }), true);
    const [line, ...more] = identity.log.lines().slice(from) as Line[];
    assert.deepEqual(more, []);
    assert.deepEqual([line?.msg, line?.subject, line?.req, line?.traceId], ['e-mail sent', 'Outside', undefined, undefined]);
  });
});
