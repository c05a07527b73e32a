import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { findUserById } from '../src/user-records/users.repository.ts';
import { RESET_DONE_MESSAGE } from '../src/password-reset/reset-password.ts';
import { type IdentityHarness, type TestUser, duringDemotion, startIdentity, uniqueUsername } from './support/identity-harness.ts';

const RESET_PAGE = 'http://localhost:3000/reset-password';
const LOGIN_PAGE = 'http://localhost:3000/login';
const UNKNOWN_USER_ID = '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e';
const THIRTY_MINUTES_MS = 30 * 60 * 1000;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** Requests, e-mails and logins against one harness; every request comes from its own source address. */
function resetClient(identity: () => IdentityHarness) {
  let addresses = 0;
  const nextAddress = () => {
    addresses += 1;
    return `10.7.${Math.floor(addresses / 250)}.${(addresses % 250) + 1}`;
  };
  const client = {
    ask(body: Record<string, unknown>, options: { bearer?: string; address?: string } = {}) {
      const req = request(identity().app)
        .post('/v1/users/password-reset-request')
        .set(identity().viaGateway('POST', '/v1/users/password-reset-request', { address: options.address ?? nextAddress() }));
      if (options.bearer !== undefined) req.set('Authorization', `Bearer ${options.bearer}`);
      return req.send(body);
    },
    reset: (body: Record<string, unknown>) => request(identity().app).post('/v1/users/password-reset').send(body),
    mailsTo: (username: string) =>
      identity()
        .mail.received.map((call) => call.body as { to: string; subject: string; text: string })
        .filter((mail) => mail.to === username),
    async mailTo(username: string) {
      const deadline = Date.now() + 3000;
      for (;;) {
        const [mail] = client.mailsTo(username);
        if (mail !== undefined) return mail;
        if (Date.now() > deadline) throw new Error(`no e-mail to ${username}`);
        await sleep(10);
      }
    },
    /** Asks for a reset anonymously and reads the link out of the e-mail. */
    async emailedLink(user: TestUser, resetPageLink = RESET_PAGE): Promise<URL> {
      const before = client.mailsTo(user.username).length;
      const res = await client.ask({ username: user.username, resetPageLink });
      assert.equal(res.status, 202);
      const deadline = Date.now() + 3000;
      while (client.mailsTo(user.username).length === before) {
        if (Date.now() > deadline) throw new Error(`no e-mail to ${user.username}`);
        await sleep(10);
      }
      const mail = client.mailsTo(user.username).at(-1)!;
      const link = /https?:\/\/\S+/.exec(mail.text)?.[0];
      assert.ok(link !== undefined, `a link in ${mail.text}`);
      return new URL(link);
    },
    async loginStatus(username: string, password: string): Promise<number> {
      return (await request(identity().app).post('/v1/auth/login').set(identity().viaGateway('POST', '/v1/auth/login', { address: nextAddress() })).send({ username, password })).status;
    },
  };
  return client;
}

describe('POST /v1/users/password-reset-request', () => {
  let identity: IdentityHarness;
  let adminToken: string;
  const client = resetClient(() => identity);

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  it('when an anonymous caller names an existing user, answers 202 with no body and e-mails the user a link with userId and token', async () => {
    const user = await identity.createUser({ firstName: 'Grace' });
    const res = await client.ask({ username: user.username.toUpperCase(), resetPageLink: `${RESET_PAGE}?lang=tr` });
    assert.equal(res.status, 202);
    assert.equal(res.text, '');
    assert.equal(res.headers['content-type'], undefined);

    const mail = await client.mailTo(user.username);
    assert.equal(mail.to, user.username, 'the stored spelling');
    assert.equal(mail.subject, 'Reset your password');
    assert.match(mail.text, /^Hello Grace,/);
    const link = new URL(/https?:\/\/\S+/.exec(mail.text)![0]);
    assert.equal(`${link.origin}${link.pathname}`, RESET_PAGE);
    assert.equal(link.searchParams.get('lang'), 'tr', 'the page keeps its own parameters');
    assert.equal(link.searchParams.get('userId'), user.id);
    const token = link.searchParams.get('token')!;
    assert.match(token, TOKEN_SHAPE, '256 random bits, base64url');

    const rows = await identity.db('password_reset_tokens').where({ user_id: user.id });
    assert.equal(rows.length, 1);
    assert.deepEqual(rows[0].token_hash, createHash('sha256').update(token).digest(), 'only the hash is stored');
    assert.ok(Math.abs(rows[0].expires_at.getTime() - (Date.now() + THIRTY_MINUTES_MS)) < 10_000);
  });

  it('when no resetPageLink is given, the e-mail still carries the user id and the token', async () => {
    const user = await identity.createUser();
    assert.equal((await client.ask({ username: user.username })).status, 202);
    const mail = await client.mailTo(user.username);
    assert.ok(mail.text.includes(user.id));
    assert.match(mail.text, /reset token: [A-Za-z0-9_-]{43}\n/);
  });

  it('when the username is unknown, answers the same 202 and sends no e-mail', async () => {
    const known = await identity.createUser();
    const unknown = uniqueUsername('nobody');
    const unknownRes = await client.ask({ username: unknown, resetPageLink: RESET_PAGE });
    const knownRes = await client.ask({ username: known.username, resetPageLink: RESET_PAGE });
    assert.equal(unknownRes.status, 202);
    assert.equal(unknownRes.text, knownRes.text);
    assert.deepEqual(Object.keys(unknownRes.headers).sort(), Object.keys(knownRes.headers).sort());
    await client.mailTo(known.username);
    await sleep(250);
    assert.deepEqual(client.mailsTo(unknown), []);
  });

  it('when a caller with a valid non-ADMIN token asks, answers 202 like an anonymous caller', async () => {
    const user = await identity.createUser({ roles: ['POWER_USER'] });
    const { accessToken } = await identity.login(user);
    const res = await client.ask({ username: user.username, resetPageLink: RESET_PAGE }, { bearer: accessToken });
    assert.equal(res.status, 202);
    assert.equal(res.text, '');
    await client.mailTo(user.username);
  });

  for (const link of ['https://evil.example.com/reset', 'https://localhost:3000/reset', 'http://localhost:3001/reset', 'http://localhost:3000@evil.example.com/']) {
    it(`when resetPageLink is ${link} (not on the allow-list), answers 400 and neither stores a token nor e-mails`, async () => {
      const user = await identity.createUser();
      const res = await client.ask({ username: user.username, resetPageLink: link });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'Bad Request');
      assert.equal(res.body.message, 'body.resetPageLink must point to an allowed origin');
      assert.equal((await identity.db('password_reset_tokens').where({ user_id: user.id })).length, 0);
      await sleep(100);
      assert.deepEqual(client.mailsTo(user.username), []);
    });
  }

  it('when resetPageLink is on the allow-list but carries a control or bidi character, answers 400 and neither stores a token nor e-mails', async () => {
    const user = await identity.createUser();
    for (const link of [`${RESET_PAGE}\r\nBcc: eve@example.com`, `${RESET_PAGE}\u001b]8;;https://evil.example.com\u0007`, `${RESET_PAGE}\u202e`]) {
      const res = await client.ask({ username: user.username, resetPageLink: link });
      assert.equal(res.status, 400, JSON.stringify(link));
      assert.match(res.body.message, /body\.resetPageLink must match pattern/);
    }
    assert.equal((await identity.db('password_reset_tokens').where({ user_id: user.id })).length, 0);
    await sleep(100);
    assert.deepEqual(client.mailsTo(user.username), []);
  });

  it('when the anonymous answer is sent, the token is stored after it, and a failing mail provider changes nothing in the answer', async () => {
    const user = await identity.createUser();
    identity.mail.answerWith(503);
    try {
      const res = await client.ask({ username: user.username, resetPageLink: RESET_PAGE });
      assert.equal(res.status, 202);
      const deadline = Date.now() + 3000;
      while ((await identity.db('password_reset_tokens').where({ user_id: user.id })).length === 0 && Date.now() < deadline) await sleep(10);
      assert.equal((await identity.db('password_reset_tokens').where({ user_id: user.id })).length, 1);
      while (!identity.log.text().includes('e-mail not sent') && Date.now() < deadline) await sleep(10);
      assert.ok(identity.log.text().includes('e-mail not sent'), 'the failed delivery is logged');
    } finally {
      identity.mail.answerWith(200);
    }
    assert.equal((await client.ask({ username: uniqueUsername('after') })).status, 202, 'the service keeps serving');
  });

  it('when an ADMIN asks, answers 201 with userId, token and expiresAt 30 minutes ahead', async () => {
    const user = await identity.createUser();
    const res = await client.ask({ username: user.username }, { bearer: adminToken });
    assert.equal(res.status, 201);
    assert.deepEqual(Object.keys(res.body).sort(), ['expiresAt', 'token', 'userId']);
    assert.equal(res.body.userId, user.id);
    assert.match(res.body.token, TOKEN_SHAPE);
    assert.ok(Math.abs(Date.parse(res.body.expiresAt) - (Date.now() + THIRTY_MINUTES_MS)) < 10_000, res.body.expiresAt);
    const row = await identity.db('password_reset_tokens').where({ user_id: user.id }).first();
    assert.equal(row.expires_at.toISOString(), res.body.expiresAt);
  });

  it('an ADMIN\'s ticket asked while the ADMIN\'s own row is held (a demotion in flight) and its session ends: 401, and no token is issued', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const bearer = (await identity.login(admin)).accessToken;
    const user = await identity.createUser();
    const res = await duringDemotion(identity.db, admin.id, () => client.ask({ username: user.username }, { bearer }), 'the ticket never waited for the ADMIN\'s row');
    assert.equal(res.status, 401, `answered ${res.status}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.message, 'Bad Credentials');
    assert.equal((await identity.db('password_reset_tokens').where({ user_id: user.id })).length, 0, 'a ticket for an ADMIN demoted before it');
  });

  it('when an ADMIN names an unknown username, answers 404 User not found', async () => {
    const res = await client.ask({ username: uniqueUsername('nobody') }, { bearer: adminToken });
    assert.equal(res.status, 404);
    assert.equal(res.body.message, 'User not found');
  });

  it('when the bearer token does not verify, answers 401 Bad Credentials and sends nothing', async () => {
    const user = await identity.createUser();
    for (const bearer of ['not.a.jwt', `${adminToken}x`]) {
      const res = await client.ask({ username: user.username, resetPageLink: RESET_PAGE }, { bearer });
      assert.equal(res.status, 401);
      assert.equal(res.body.message, 'Bad Credentials');
    }
    assert.equal((await identity.db('password_reset_tokens').where({ user_id: user.id })).length, 0);
  });

  it('when the body is not valid (unknown field, no username, a username that is not an e-mail), answers 400', async () => {
    const user = await identity.createUser();
    for (const body of [{ username: user.username, userId: user.id }, { resetPageLink: RESET_PAGE }, { username: 'not-an-email' }]) {
      assert.equal((await client.ask(body)).status, 400, JSON.stringify(body));
    }
  });

  it('when requests for one user race, every caller gets its normal answer and exactly one token stays usable', async () => {
    const user = await identity.createUser();
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => client.ask({ username: user.username }, { bearer: adminToken })),
      ...Array.from({ length: 4 }, () => client.ask({ username: user.username, resetPageLink: RESET_PAGE })),
    ]);
    assert.deepEqual(
      answers.map((res) => res.status),
      [201, 201, 201, 201, 202, 202, 202, 202],
    );
    // The anonymous requests store their tokens after their answers; each mail follows its token.
    const deadline = Date.now() + 3000;
    while (client.mailsTo(user.username).length < 4 && Date.now() < deadline) await sleep(10);
    const open = await identity.db('password_reset_tokens').where({ user_id: user.id }).whereNull('used_at').whereNull('voided_at');
    assert.equal(open.length, 1);
    assert.equal((await identity.db('password_reset_tokens').where({ user_id: user.id })).length, 8);
  });

  describe('when a rename of the user commits while its token is being issued (the user row is locked meanwhile)', () => {
    /**
     * Holds the user's row locked in a transaction (as PATCH /v1/users/update does), sends `ask`, waits
     * until the request's work waits on that lock (it has looked the user up by its old username by then),
     * then renames the user and voids its open tokens as a rename does, and commits.
     */
    async function renamedWhileIssuing(user: TestUser, ask: () => Promise<request.Response>) {
      const renamed = uniqueUsername('renamed');
      const trx = await identity.db.transaction();
      try {
        await trx('users').where({ id: user.id }).forUpdate().first('id');
        const { rows } = await trx.raw<{ rows: Array<{ pid: number }> }>('SELECT pg_backend_pid() AS pid');
        const answer = ask().then((res) => res);
        const waitingOnUs = async () =>
          (await identity.db.raw<{ rows: unknown[] }>('SELECT 1 FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [rows[0]!.pid])).rows.length > 0;
        for (const deadline = Date.now() + 3000; !(await waitingOnUs()); await sleep(5)) {
          if (Date.now() > deadline) throw new Error('the reset request never waited on the user row');
        }
        await trx('users').where({ id: user.id }).update({ username: renamed });
        await trx('password_reset_tokens').where({ user_id: user.id }).whereNull('used_at').whereNull('voided_at').update({ voided_at: trx.fn.now() });
        await trx.commit();
        return { answer: await answer, renamed };
      } catch (err) {
        await trx.rollback().catch(() => undefined);
        throw err;
      }
    }
    const openTokens = (userId: string) => identity.db('password_reset_tokens').where({ user_id: userId }).whereNull('used_at').whereNull('voided_at');

    it('an anonymous request: no token stays open and nothing is mailed, to the old address or the new', async () => {
      const user = await identity.createUser();
      const { answer, renamed } = await renamedWhileIssuing(user, () => client.ask({ username: user.username, resetPageLink: RESET_PAGE }));
      assert.equal(answer.status, 202);
      // Anonymous work is carried out in the order asked: once this later request's mail is out, the raced one is done.
      const fence = await identity.createUser();
      await client.emailedLink(fence);
      assert.deepEqual(await openTokens(user.id), [], 'a live token was issued for the old username');
      assert.deepEqual([...client.mailsTo(user.username), ...client.mailsTo(renamed)], []);
    });

    it('an ADMIN\'s request: answers 404 User not found and issues no token', async () => {
      const user = await identity.createUser();
      const { answer } = await renamedWhileIssuing(user, () => client.ask({ username: user.username }, { bearer: adminToken }));
      assert.equal(answer.status, 404, JSON.stringify(answer.body));
      assert.equal(answer.body.message, 'User not found');
      assert.deepEqual(await openTokens(user.id), []);
    });
  });
});

describe('POST /v1/users/password-reset', () => {
  let identity: IdentityHarness;
  let adminToken: string;
  const client = resetClient(() => identity);

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  /** A reset token straight from the ADMIN answer. */
  async function ticket(user: TestUser): Promise<string> {
    const res = await client.ask({ username: user.username }, { bearer: adminToken });
    assert.equal(res.status, 201);
    return res.body.token as string;
  }

  it('when the e-mailed token is used, answers 200 with a message; the new password logs in and the old one no longer does', async () => {
    const user = await identity.createUser();
    const link = await client.emailedLink(user);
    const res = await client.reset({ userId: link.searchParams.get('userId'), token: link.searchParams.get('token'), newPassword: 'brand-new-password' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { message: RESET_DONE_MESSAGE });
    assert.equal(await client.loginStatus(user.username, 'brand-new-password'), 200);
    assert.equal(await client.loginStatus(user.username, user.password), 401);
  });

  it('when the same token is used a second time, answers 400 and the password stays the first new one', async () => {
    const user = await identity.createUser();
    const token = await ticket(user);
    assert.equal((await client.reset({ userId: user.id, token, newPassword: 'first-new-password' })).status, 200);
    const again = await client.reset({ userId: user.id, token, newPassword: 'second-new-password' });
    assert.equal(again.status, 400);
    assert.equal(again.body.error, 'Bad Request');
    assert.equal(again.body.message, 'The password reset token is invalid, used or expired');
    assert.equal(again.body.path, '/v1/users/password-reset');
    assert.equal(await client.loginStatus(user.username, 'second-new-password'), 401);
    assert.equal(await client.loginStatus(user.username, 'first-new-password'), 200);
  });

  it('when a newer request was made, the older token answers 400 and the newer one 200', async () => {
    const user = await identity.createUser();
    const older = await ticket(user);
    const newer = (await client.emailedLink(user)).searchParams.get('token');
    assert.equal((await client.reset({ userId: user.id, token: older, newPassword: 'older-token-password' })).status, 400);
    assert.equal((await client.reset({ userId: user.id, token: newer, newPassword: 'newer-token-password' })).status, 200);
    assert.equal(await client.loginStatus(user.username, 'newer-token-password'), 200);
  });

  it('when the token has expired, answers 400 and the password is unchanged', async () => {
    const user = await identity.createUser();
    const token = await ticket(user);
    await identity.db('password_reset_tokens')
      .where({ user_id: user.id })
      .update({ created_at: identity.db.raw("now() - interval '31 minutes'"), expires_at: identity.db.raw("now() - interval '1 second'") });
    assert.equal((await client.reset({ userId: user.id, token, newPassword: 'too-late-password' })).status, 400);
    assert.equal(await client.loginStatus(user.username, user.password), 200);
  });

  it('when the token is made up or belongs to another user, answers 400, and the token still works for its owner', async () => {
    const owner = await identity.createUser();
    const other = await identity.createUser();
    const token = await ticket(owner);
    const attempts = [
      { userId: other.id, token },
      { userId: UNKNOWN_USER_ID, token },
      { userId: owner.id, token: `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}` },
      { userId: owner.id, token: 'x' },
    ];
    for (const attempt of attempts) {
      assert.equal((await client.reset({ ...attempt, newPassword: 'hijacked-password' })).status, 400, JSON.stringify(attempt));
    }
    assert.equal(await client.loginStatus(other.username, 'hijacked-password'), 401);
    assert.equal(await client.loginStatus(other.username, other.password), 200);
    assert.equal((await client.reset({ userId: owner.id, token, newPassword: 'owner-new-password' })).status, 200);
  });

  it('when the userId is written in another accepted uuid spelling, answers like the canonical one, never 500', async () => {
    const user = await identity.createUser();
    const token = await ticket(user);
    assert.equal((await client.reset({ userId: `urn:uuid:${UNKNOWN_USER_ID}`, token, newPassword: 'some-new-password' })).status, 400);
    const res = await client.reset({ userId: user.id.toUpperCase(), token, newPassword: 'upper-case-password' });
    assert.equal(res.status, 200);
    assert.equal(await client.loginStatus(user.username, 'upper-case-password'), 200);
  });

  it('when loginPageLink is on the allow-list, answers 303 with an empty body and Location = the link plus message', async () => {
    const user = await identity.createUser();
    const token = await ticket(user);
    const res = await client.reset({ userId: user.id, token, newPassword: 'redirected-password', loginPageLink: `${LOGIN_PAGE}?lang=tr&next=%2Fhome` });
    assert.equal(res.status, 303);
    assert.equal(res.text, '');
    const location = new URL(res.headers.location as string);
    assert.equal(`${location.origin}${location.pathname}`, LOGIN_PAGE);
    assert.deepEqual([...location.searchParams.entries()], [
      ['lang', 'tr'],
      ['next', '/home'],
      ['message', RESET_DONE_MESSAGE],
    ]);
    assert.equal(await client.loginStatus(user.username, 'redirected-password'), 200);
  });

  it('when loginPageLink points elsewhere, answers 400 without using up the token', async () => {
    const user = await identity.createUser();
    const token = await ticket(user);
    for (const loginPageLink of ['https://evil.example.com/login', 'http://localhost:3000.evil.example.com/login', 'ftp://localhost:3000/login']) {
      const res = await client.reset({ userId: user.id, token, newPassword: 'open-redirect-password', loginPageLink });
      assert.equal(res.status, 400, loginPageLink);
      assert.equal(res.headers.location, undefined);
    }
    assert.equal(await client.loginStatus(user.username, user.password), 200, 'the password did not change');
    assert.equal((await client.reset({ userId: user.id, token, newPassword: 'finally-new-password' })).status, 200);
  });

  it('when newPassword has 8–72 characters but more than 72 UTF-8 bytes, answers 400 without using up the token', async () => {
    const user = await identity.createUser();
    const token = await ticket(user);
    const res = await client.reset({ userId: user.id, token, newPassword: 'ü'.repeat(40) });
    assert.equal(res.status, 400);
    assert.deepEqual(res.body.messages, ['body.newPassword must be 8 to 72 bytes in UTF-8, got 80']);
    assert.equal((await client.reset({ userId: user.id, token, newPassword: 'short' })).status, 400);
    assert.equal(await client.loginStatus(user.username, user.password), 200);
    assert.equal((await client.reset({ userId: user.id, token, newPassword: 'ü'.repeat(36) })).status, 200, '72 bytes is fine');
    assert.equal(await client.loginStatus(user.username, 'ü'.repeat(36)), 200);
  });

  it('when the reset succeeds, every session of the user ends: their refresh tokens answer 401', async () => {
    const user = await identity.createUser();
    const sessions = [await identity.login(user), await identity.login(user)];
    const token = await ticket(user);
    assert.equal((await client.reset({ userId: user.id, token, newPassword: 'sessions-end-password' })).status, 200);
    for (const session of sessions) {
      const res = await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: session.refreshToken });
      assert.equal(res.status, 401);
    }
    const live = await identity.db('sessions').where({ user_id: user.id }).whereNull('revoked_at');
    assert.equal(live.length, 0);
  });

  it('when the user is BLOCKED, the reset sets the password but the user stays BLOCKED and cannot log in', async () => {
    const user = await identity.createUser({ status: 'BLOCKED' });
    const token = await ticket(user);
    assert.equal((await client.reset({ userId: user.id, token, newPassword: 'blocked-new-password' })).status, 200);
    assert.equal((await findUserById(identity.db, user.id))?.status, 'BLOCKED');
    assert.equal(await client.loginStatus(user.username, 'blocked-new-password'), 401);
  });

  it('when a reset with a token and a new request for the same user race (20 times), neither answers 500', async () => {
    for (let i = 0; i < 20; i += 1) {
      const user = await identity.createUser();
      const token = await ticket(user);
      const [reset, asked] = await Promise.all([
        client.reset({ userId: user.id, token, newPassword: `raced-password-${i}` }),
        client.ask({ username: user.username }, { bearer: adminToken }),
      ]);
      // The request voids the token (then the reset answers 400) or comes after the reset: either is fine, a deadlock is not.
      assert.ok([200, 400].includes(reset.status), `try ${i}: reset ${reset.status} ${JSON.stringify(reset.body)}`);
      assert.equal(asked.status, 201, `try ${i}: request ${JSON.stringify(asked.body)}`);
    }
  });

  it('when a reset with a token and a rename of its user race (20 times), neither answers 500 and the token is not used after the rename', async () => {
    for (let i = 0; i < 20; i += 1) {
      const user = await identity.createUser();
      const token = await ticket(user);
      const [reset, renamed] = await Promise.all([
        client.reset({ userId: user.id, token, newPassword: `raced-password-${i}` }),
        request(identity.app).patch('/v1/users/update').set('Authorization', `Bearer ${adminToken}`).send({ userId: user.id, username: uniqueUsername('raced') }),
      ]);
      assert.equal(renamed.status, 200, `try ${i}: rename ${JSON.stringify(renamed.body)}`);
      // The rename voids the token (then the reset answers 400) or waits for the reset: a deadlock is neither.
      assert.ok([200, 400].includes(reset.status), `try ${i}: reset ${reset.status} ${JSON.stringify(reset.body)}`);
    }
  });

  it('when 5 resets with one token race, exactly one succeeds', async () => {
    const user = await identity.createUser();
    const token = await ticket(user);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) => client.reset({ userId: user.id, token, newPassword: `racing-password-${i}` })),
    );
    assert.deepEqual(answers.map((res) => res.status).sort(), [200, 400, 400, 400, 400]);
    const winner = answers.findIndex((res) => res.status === 200);
    assert.equal(await client.loginStatus(user.username, `racing-password-${winner}`), 200);
  });

  it('with MAIL_PROVIDER=http, neither the reset token nor the new password ever reaches the log', async () => {
    const user = await identity.createUser();
    const emailed = (await client.emailedLink(user)).searchParams.get('token')!;
    const issued = await ticket(user);
    await client.reset({ userId: UNKNOWN_USER_ID, token: issued, newPassword: 'logged-password-1' });
    await client.reset({ userId: user.id, token: emailed, newPassword: 'logged-password-1' });
    const ok = await client.reset({ userId: user.id, token: issued, newPassword: 'logged-password-2', loginPageLink: LOGIN_PAGE });
    assert.equal(ok.status, 303);
    assert.equal(identity.config.MAIL_PROVIDER, 'http');
    const log = identity.log.text();
    assert.ok(log.includes('/v1/users/password-reset'), 'the requests were logged');
    for (const secret of [emailed, issued, 'logged-password-1', 'logged-password-2']) assert.ok(!log.includes(secret), `${secret} is not logged`);
  });
});

describe('POST /v1/users/password-reset-request throttling', () => {
  let identity: IdentityHarness;
  const client = resetClient(() => identity);

  before(async () => {
    identity = await startIdentity({ PASSWORD_RESET_REQUESTS_PER_HOUR: '2' });
  });
  after(async () => {
    await identity.close();
  });

  it('when one address asks a third time within the hour, answers 429 with Retry-After and sends nothing; other addresses still get 202', async () => {
    const user = await identity.createUser();
    const address = '203.0.113.7';
    assert.equal((await client.ask({ username: uniqueUsername('first') }, { address })).status, 202);
    assert.equal((await client.ask({ username: uniqueUsername('second') }, { address })).status, 202);
    const res = await client.ask({ username: user.username, resetPageLink: RESET_PAGE }, { address });
    assert.equal(res.status, 429);
    assert.equal(res.body.error, 'Too Many Requests');
    assert.equal(res.body.message, 'Too many password reset requests');
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${res.headers['retry-after']}`);
    assert.equal((await identity.db('password_reset_tokens').where({ user_id: user.id })).length, 0);

    assert.equal((await client.ask({ username: user.username, resetPageLink: RESET_PAGE }, { address: '203.0.113.8' })).status, 202);
    await client.mailTo(user.username);
  });

  it('an ADMIN\'s ticket is no e-mail: from an address and a client key whose allowance anonymous callers spent, it is issued, and they stay refused', async () => {
    const user = await identity.createUser();
    const adminToken = await identity.tokenFor(['ADMIN']);
    const origin = { address: '203.0.113.50', clientKeyId: 'shared-app-key' };
    const ask = (bearer?: string) =>
      request(identity.app)
        .post('/v1/users/password-reset-request')
        .set({ ...identity.viaGateway('POST', '/v1/users/password-reset-request', origin), ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }) })
        .send({ username: user.username });
    assert.deepEqual([(await ask()).status, (await ask()).status, (await ask()).status], [202, 202, 429]);
    const ticket = await ask(adminToken);
    assert.equal(ticket.status, 201, JSON.stringify(ticket.body));
    assert.equal(ticket.body.userId, user.id);
    // Anonymous callers of that key and address are still refused: the ticket neither spent nor lifted their allowance.
    assert.equal((await ask()).status, 429);
  });

  it('when 10 requests from one address arrive at once, lets exactly 2 through', async () => {
    const address = '203.0.113.99';
    const answers = await Promise.all(Array.from({ length: 10 }, () => client.ask({ username: uniqueUsername('burst') }, { address })));
    assert.deepEqual(
      answers.map((res) => res.status).sort(),
      [202, 202, 429, 429, 429, 429, 429, 429, 429, 429],
    );
  });
});

describe('POST /v1/users/password-reset-request: e-mails to one user (PASSWORD_RESET_MAILS_PER_USER_PER_HOUR)', () => {
  let identity: IdentityHarness;
  let adminToken: string;
  const client = resetClient(() => identity);
  const WITHHELD = 'password reset e-mail withheld: the user was sent as many in the last hour';

  before(async () => {
    identity = await startIdentity({ PASSWORD_RESET_MAILS_PER_USER_PER_HOUR: '2' });
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const withheldFor = (user: TestUser) => identity.log.lines().filter((line) => line.msg === WITHHELD && line.userId === user.id).length;
  /** Asks anonymously (each from its own address) and waits until the request's work is done: a mail sent, or one withheld. */
  async function askAndSettle(user: TestUser): Promise<request.Response> {
    const before = client.mailsTo(user.username).length + withheldFor(user);
    const res = await client.ask({ username: user.username, resetPageLink: RESET_PAGE });
    const deadline = Date.now() + 3000;
    while (client.mailsTo(user.username).length + withheldFor(user) === before) {
      if (Date.now() > deadline) throw new Error(`the request for ${user.username} neither mailed nor was withheld`);
      await sleep(10);
    }
    return res;
  }

  it('past the allowance, requests from other addresses are answered alike and send nothing; the last token mailed stays usable', async () => {
    const user = await identity.createUser();
    const other = await identity.createUser();
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await askAndSettle(user));
    for (const res of answers) assert.deepEqual([res.status, res.text, res.headers['content-type']], [202, '', undefined]);
    assert.equal(client.mailsTo(user.username).length, 2, 'mails past the allowance');
    assert.equal(withheldFor(user), 2);
    assert.equal((await identity.db('password_reset_tokens').where({ user_id: user.id })).length, 2, 'a withheld request stored a token');
    // Another user's mail is not held back by this one's.
    await askAndSettle(other);
    assert.equal(client.mailsTo(other.username).length, 1);
    // The second mail's token was not voided by the requests withheld after it.
    const link = new URL(/https?:\/\/\S+/.exec(client.mailsTo(user.username).at(-1)!.text)![0]);
    const reset = await client.reset({ userId: user.id, token: link.searchParams.get('token'), newPassword: 'a-new-password-after-the-flood' });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
  });

  it('an ADMIN\'s ticket is not an e-mail: it is issued past the allowance, and does not spend it', async () => {
    const user = await identity.createUser();
    for (let i = 0; i < 2; i += 1) {
      const ticket = await client.ask({ username: user.username }, { bearer: adminToken });
      assert.equal(ticket.status, 201, JSON.stringify(ticket.body));
    }
    for (let i = 0; i < 3; i += 1) await askAndSettle(user);
    assert.equal(client.mailsTo(user.username).length, 2);
    const ticket = await client.ask({ username: user.username }, { bearer: adminToken });
    assert.equal(ticket.status, 201, JSON.stringify(ticket.body));
  });

  it('requests for one user at once send no more than the allowance', async () => {
    const user = await identity.createUser();
    const answers = await Promise.all(Array.from({ length: 8 }, () => client.ask({ username: user.username })));
    assert.deepEqual(new Set(answers.map((res) => res.status)), new Set([202]));
    const deadline = Date.now() + 5000;
    while (client.mailsTo(user.username).length + withheldFor(user) < 8 && Date.now() < deadline) await sleep(10);
    assert.equal(client.mailsTo(user.username).length, 2);
    assert.equal(withheldFor(user), 6);
  });
});
