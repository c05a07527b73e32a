import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import type { Role } from '@platform/auth';
import { callerSessionLives } from '../src/sessions/sessions.repository.ts';
import { type IdentityHarness, type TestUser, duringDemotion, startIdentity, uniqueUsername, whileHeld } from './support/identity-harness.ts';

describe('PATCH /v1/users/update: username changes', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity({ USERNAME_CHANGES_PER_DAY: '3', AUTH_MAX_FAILED_LOGINS: '5' });
  });
  after(async () => {
    await identity.close();
  });

  const update = (token: string, body: object) => request(identity.app).patch('/v1/users/update').set('Authorization', `Bearer ${token}`).send(body);
  const tokenOf = async (user: Pick<TestUser, 'username' | 'password'>) => (await identity.login(user)).accessToken;
  const storedUsername = async (id: string) => ((await identity.db('users').where({ id }).first('username')) as { username: string }).username;
  const mailsTo = (to: string) => identity.mail.received.map((r) => r.body as { to: string; subject: string; text: string }).filter((m) => m.to === to);
  async function noticeTo(to: string) {
    const deadline = Date.now() + 3000;
    for (;;) {
      const notice = mailsTo(to).find((m) => m.subject === 'Your username was changed');
      if (notice !== undefined) return notice;
      if (Date.now() > deadline) throw new Error(`no notice to ${to}`);
      await sleep(10);
    }
  }

  it('a rename whose session ends while it waits for the user\'s row (a block, a logout) answers 401 and changes nothing', async () => {
    const user = await identity.createUser();
    const token = await tokenOf(user);
    const { answer: res } = await whileHeld(identity.db, {
      hold: (trx) => trx('users').where({ id: user.id }).forUpdate().first('id'),
      send: () => update(token, { userId: user.id, username: uniqueUsername(), currentPassword: user.password }),
      meanwhile: async () => {
        assert.equal((await request(identity.app).post('/v1/auth/logout').send({ jwtToken: token })).status, 200);
      },
      what: 'the rename never waited for the user\'s row',
    });
    assert.equal(res.status, 401, `answered ${res.status}: ${JSON.stringify(res.body)}`);
    assert.equal(await storedUsername(user.id), user.username, 'renamed from a session that had ended');
  });

  it('an ADMIN\'s change of another user, made while the ADMIN\'s own row is held (a demotion in flight) and its session ends, answers 401 and changes nothing', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const target = await identity.createUser();
    const token = await tokenOf(admin);
    const res = await duringDemotion(identity.db, admin.id, () => update(token, { userId: target.id, username: uniqueUsername() }), 'the change never waited for the ADMIN\'s row');
    assert.equal(res.status, 401, `answered ${res.status}: ${JSON.stringify(res.body)}`);
    assert.equal(await storedUsername(target.id), target.username, 'changed by an ADMIN whose session had ended');
  });

  it('a logout waits for a change that read its session as live, so the change never commits after it (callerSessionLives holds the session)', async () => {
    const user = await identity.createUser();
    const token = await tokenOf(user);
    const caller = { userId: user.id, sessionId: (JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8')) as { sid: string }).sid };
    const { answer: res, meanwhile: lived } = await whileHeld(identity.db, {
      // The test's transaction is the change, between its read of the session and its commit.
      hold: async (trx) => assert.equal(await callerSessionLives(trx, caller, user.id), true),
      send: () => request(identity.app).post('/v1/auth/logout').send({ jwtToken: token }),
      meanwhile: async () => (await identity.db('sessions').where({ id: caller.sessionId }).whereNull('revoked_at').first('id')) !== undefined,
      what: 'the logout never waited for the change that read its session',
      at: 'sessions',
    });
    assert.equal(lived, true, 'the session ended while a change that read it was in flight');
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  it('two ADMINs changing each other at once, many times over, wait for one another and never deadlock (the users\' rows taken in id order)', async () => {
    const [a, b] = await Promise.all([identity.createUser({ roles: ['ADMIN'] }), identity.createUser({ roles: ['ADMIN'] })]);
    const [ta, tb] = await Promise.all([tokenOf(a), tokenOf(b)]);
    const deadlocks = async () => Number((await identity.db.raw('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()')).rows[0].deadlocks);
    const before = await deadlocks();
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => [update(ta, { userId: b.id, firstName: `B${i}` }), update(tb, { userId: a.id, firstName: `A${i}` })]).flat(),
    );
    assert.deepEqual([...new Set(answers.map((r) => r.status))], [200], answers.map((r) => `${r.status} ${JSON.stringify(r.body)}`).join('\n'));
    // Counted when each transaction ends: read once the statistics caught up.
    await sleep(1100);
    assert.equal((await deadlocks()) - before, 0, 'Postgres broke deadlocks between them');
  });

  describe('who may change whose', () => {
    // [caller, target, expected]: CONTRACT.md part 4.
    const table: Array<[string, Role[], Role[], number]> = [
      ['an ADMIN', ['ADMIN'], ['ADMIN'], 200],
      ['an ADMIN', ['ADMIN'], ['POWER_USER'], 200],
      ['an ADMIN', ['ADMIN'], ['STANDARD_USER'], 200],
      ['a POWER_USER', ['POWER_USER'], ['ADMIN'], 403],
      ['a POWER_USER', ['POWER_USER'], ['POWER_USER'], 403],
      ['a POWER_USER', ['POWER_USER'], ['STANDARD_USER', 'POWER_USER'], 403],
      ['a POWER_USER', ['POWER_USER'], ['STANDARD_USER', 'ADMIN'], 403],
      ['a POWER_USER', ['POWER_USER'], ['STANDARD_USER'], 200],
      ['a POWER_USER', ['POWER_USER'], ['GUEST'], 200],
      ['a POWER_USER', ['POWER_USER'], ['EXTENDED_USER', 'API_USER'], 200],
      ['a STANDARD_USER', ['STANDARD_USER'], ['STANDARD_USER'], 403],
      ['an EXTENDED_USER', ['EXTENDED_USER'], ['GUEST'], 403],
      ['a GUEST', ['GUEST'], ['STANDARD_USER'], 403],
    ];
    for (const [callerName, callerRoles, targetRoles, expected] of table) {
      it(`when ${callerName} changes the username of a user with roles ${targetRoles.join('+')}, answers ${expected}`, async () => {
        const caller = await identity.createUser({ roles: callerRoles });
        const target = await identity.createUser({ roles: targetRoles });
        const username = uniqueUsername('moved');
        const res = await update(await tokenOf(caller), { userId: target.id, username });
        assert.equal(res.status, expected, JSON.stringify(res.body));
        assert.equal(await storedUsername(target.id), expected === 200 ? username : target.username);
        if (expected === 403) assert.equal(res.body.error, 'Forbidden');
      });
    }

    it('when a POWER_USER renames an ADMIN, answers 403 and a later reset request goes to the ADMIN\'s own address', async () => {
      const power = await identity.createUser({ roles: ['POWER_USER'] });
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const attacker = uniqueUsername('attacker');
      assert.equal((await update(await tokenOf(power), { userId: admin.id, username: attacker })).status, 403);
      const askReset = (username: string) => request(identity.app).post('/v1/users/password-reset-request').send({ username });
      assert.equal((await askReset(attacker)).status, 202);
      assert.equal((await askReset(admin.username)).status, 202);
      // Reset requests are carried out in the order asked: once the ADMIN's mail is out, the attacker's request is done.
      for (const deadline = Date.now() + 3000; !mailsTo(admin.username).some((m) => m.subject === 'Reset your password'); await sleep(10)) {
        if (Date.now() > deadline) throw new Error(`no reset mail to ${admin.username}`);
      }
      assert.deepEqual(mailsTo(attacker), []);
    });

    it('when a POWER_USER changes an ADMIN\'s first name (allowed), answers 200 without the ADMIN\'s account', async () => {
      const power = await identity.createUser({ roles: ['POWER_USER'] });
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      await identity.db('accounts').insert({ user_id: admin.id, type: 'INDIVIDUAL', mobile_phone_number: '+905321234567', location: 'Secret street 1' });
      const res = await update(await tokenOf(power), { userId: admin.id, firstName: 'Renamed' });
      assert.equal(res.status, 200);
      assert.equal(res.body.account, undefined, 'a POWER_USER may not read other users\' accounts (GET /v1/accounts answers 403 too)');
      const own = await update(await tokenOf(admin), { userId: admin.id, lastName: 'Own' });
      assert.equal(own.body.account.location, 'Secret street 1', 'the owner still sees it');
    });
  });

  describe('the current password', () => {
    it('when a user renames itself without currentPassword, answers 400 and keeps the username', async () => {
      const user = await identity.createUser();
      const res = await update(await tokenOf(user), { userId: user.id, username: uniqueUsername('stolen') });
      assert.equal(res.status, 400);
      assert.equal(res.body.message, 'body.currentPassword is required to change your own username');
      assert.equal(await storedUsername(user.id), user.username);
    });

    it('when a POWER_USER renames itself without currentPassword, answers 400 as well', async () => {
      const user = await identity.createUser({ roles: ['POWER_USER'] });
      assert.equal((await update(await tokenOf(user), { userId: user.id, username: uniqueUsername('p') })).status, 400);
    });

    it('when the current password is wrong, answers 403 and counts a failed login', async () => {
      const user = await identity.createUser();
      const res = await update(await tokenOf(user), { userId: user.id, username: uniqueUsername('stolen'), currentPassword: 'not-the-password' });
      assert.equal(res.status, 403);
      assert.equal(res.body.error, 'Forbidden');
      assert.equal(await storedUsername(user.id), user.username);
      assert.equal((await identity.db('users').where({ id: user.id }).first('failed_login_count')).failed_login_count, 1);
    });

    it('when a stolen token guesses the password 6 times, the user is blocked and the token dies with its session', async () => {
      const user = await identity.createUser();
      const token = await tokenOf(user);
      const statuses: number[] = [];
      for (let i = 0; i < 7; i += 1) {
        statuses.push((await update(token, { userId: user.id, username: uniqueUsername('guess'), currentPassword: `guess-number-${i}` })).status);
      }
      assert.deepEqual(statuses, [403, 403, 403, 403, 403, 403, 401]);
      assert.equal((await identity.db('users').where({ id: user.id }).first('status')).status, 'BLOCKED');
      assert.equal(await storedUsername(user.id), user.username);
    });

    it('when 8 wrong current passwords race, every one that was checked is counted and the user is blocked', async () => {
      const user = await identity.createUser();
      const token = await tokenOf(user);
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => update(token, { userId: user.id, username: uniqueUsername('race'), currentPassword: `wrong-${i}-password` })),
      );
      // A request that arrives after the block finds its token revoked (401) and is not checked at all.
      assert.ok(answers.every((res) => res.status === 403 || res.status === 401), answers.map((res) => res.status).join());
      const row = await identity.db('users').where({ id: user.id }).first('failed_login_count', 'status');
      assert.equal(row.failed_login_count, answers.filter((res) => res.status === 403).length);
      assert.ok(row.failed_login_count >= 6);
      assert.equal(row.status, 'BLOCKED');
    });

    it('when an ADMIN renames itself or anyone, no currentPassword is needed', async () => {
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      assert.equal((await update(await tokenOf(admin), { userId: admin.id, username: uniqueUsername('admin') })).status, 200);
    });
  });

  describe('after a change', () => {
    it('when a user renames itself, answers 200; the old address gets a notice, every session ends, the new username logs in', async () => {
      const user = await identity.createUser({ firstName: 'Ada' });
      const sessions = [await identity.login(user), await identity.login(user)];
      const username = uniqueUsername('new-home');
      const res = await update(sessions[0]!.accessToken, { userId: user.id, username, currentPassword: user.password });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.username, username);
      assert.equal('currentPassword' in res.body, false);

      const notice = await noticeTo(user.username);
      assert.match(notice.text, /^Hello Ada,/);
      assert.ok(notice.text.includes(username), 'the notice names the new address');
      assert.deepEqual(mailsTo(username), [], 'nothing goes to the new address');

      for (const session of sessions) {
        assert.equal((await update(session.accessToken, { userId: user.id, firstName: 'Again' })).status, 401);
        assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: session.refreshToken })).status, 401);
      }
      assert.deepEqual(await identity.db('sessions').where({ user_id: user.id }).pluck('revoked_reason'), ['username-changed', 'username-changed']);
      assert.ok((await identity.login({ username, password: user.password })).accessToken);
      assert.equal((await request(identity.app).post('/v1/auth/login').send({ username: user.username, password: user.password })).status, 401);
    });

    it('when the username changes, a reset token issued before it is void', async () => {
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const adminToken = await tokenOf(admin);
      const user = await identity.createUser();
      const ticket = await request(identity.app).post('/v1/users/password-reset-request').set('Authorization', `Bearer ${adminToken}`).send({ username: user.username });
      assert.equal(ticket.status, 201);
      assert.equal((await update(adminToken, { userId: user.id, username: uniqueUsername('moved') })).status, 200);
      const reset = await request(identity.app).post('/v1/users/password-reset').send({ userId: user.id, token: ticket.body.token, newPassword: 'a-fresh-passphrase-9' });
      assert.equal(reset.status, 400);
    });

    it('when the new username equals the old one exactly, answers 200 and nothing ends', async () => {
      const user = await identity.createUser();
      const token = await tokenOf(user);
      assert.equal((await update(token, { userId: user.id, username: user.username, currentPassword: user.password })).status, 200);
      assert.equal((await update(token, { userId: user.id, firstName: 'Same' })).status, 200, 'the session lives on');
      assert.equal((await identity.db('username_change_counts').where({ user_id: user.id })).length, 0, 'not counted');
    });
  });

  describe('the daily cap', () => {
    it('when a user renames itself a 4th time in a UTC day, answers 429 with Retry-After up to midnight and keeps the 3rd name', async () => {
      const user = await identity.createUser();
      let current = user.username;
      for (let i = 0; i < 3; i += 1) {
        const next = uniqueUsername(`step${i}`);
        const token = await tokenOf({ username: current, password: user.password });
        assert.equal((await update(token, { userId: user.id, username: next, currentPassword: user.password })).status, 200);
        current = next;
      }
      const res = await update(await tokenOf({ username: current, password: user.password }), { userId: user.id, username: uniqueUsername('fourth'), currentPassword: user.password });
      assert.equal(res.status, 429);
      assert.equal(res.body.error, 'Too Many Requests');
      assert.equal(res.body.message, 'Too many username changes today');
      const retryAfter = Number(res.headers['retry-after']);
      assert.ok(retryAfter >= 1 && retryAfter <= 86_400, String(retryAfter));
      assert.equal(await storedUsername(user.id), current);
    });

    it('when a taken address is tried, it costs one of the day\'s tries (the 409/200 oracle is bounded)', async () => {
      const power = await identity.createUser({ roles: ['POWER_USER'] });
      const target = await identity.createUser();
      const taken = await identity.createUser();
      const token = await tokenOf(power);
      const statuses = [];
      for (let i = 0; i < 4; i += 1) statuses.push((await update(token, { userId: target.id, username: taken.username })).status);
      assert.deepEqual(statuses, [409, 409, 409, 429]);
      assert.equal((await update(token, { userId: target.id, username: uniqueUsername('free') })).status, 429, 'a free address too, once the tries are used');
    });

    it('when a POWER_USER renames one user 8 times at once, exactly 3 succeed and 5 answer 429', async () => {
      const power = await identity.createUser({ roles: ['POWER_USER'] });
      const target = await identity.createUser();
      const token = await tokenOf(power);
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => update(token, { userId: target.id, username: uniqueUsername(`burst${i}`) })));
      assert.deepEqual(answers.map((res) => res.status).sort(), [200, 200, 200, 429, 429, 429, 429, 429]);
      assert.equal((await identity.db('username_change_counts').where({ user_id: target.id }).first('changes')).changes, 3);
    });

    it('when an ADMIN renames a user whose cap is used up, answers 200 (ADMIN changes are not capped)', async () => {
      const power = await identity.createUser({ roles: ['POWER_USER'] });
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const target = await identity.createUser();
      const token = await tokenOf(power);
      for (let i = 0; i < 3; i += 1) assert.equal((await update(token, { userId: target.id, username: uniqueUsername('cap') })).status, 200);
      assert.equal((await update(token, { userId: target.id, username: uniqueUsername('cap') })).status, 429);
      assert.equal((await update(await tokenOf(admin), { userId: target.id, username: uniqueUsername('admin-did') })).status, 200);
    });

    it('when an ADMIN renames a user 4 times, none of the user\'s own 3 changes of the day is used up', async () => {
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const user = await identity.createUser();
      const adminToken = await tokenOf(admin);
      for (let i = 0; i < 4; i += 1) assert.equal((await update(adminToken, { userId: user.id, username: uniqueUsername(`by-admin${i}`) })).status, 200);
      assert.deepEqual(await identity.db('username_change_counts').where({ user_id: user.id }).pluck('changes'), [], 'ADMIN changes are not counted');
      const statuses = [];
      for (let i = 0; i < 4; i += 1) {
        const token = await tokenOf({ username: await storedUsername(user.id), password: user.password });
        statuses.push((await update(token, { userId: user.id, username: uniqueUsername(`own${i}`), currentPassword: user.password })).status);
      }
      assert.deepEqual(statuses, [200, 200, 200, 429]);
    });

    it('when yesterday\'s changes are counted, today starts from zero', async () => {
      const power = await identity.createUser({ roles: ['POWER_USER'] });
      const target = await identity.createUser();
      await identity.db('username_change_counts').insert({ user_id: target.id, day: identity.db.raw("(now() AT TIME ZONE 'UTC')::date - 1"), changes: 3 });
      assert.equal((await update(await tokenOf(power), { userId: target.id, username: uniqueUsername('today') })).status, 200);
      assert.deepEqual(await identity.db('username_change_counts').where({ user_id: target.id }).pluck('changes'), [1], 'yesterday\'s row is gone');
    });

    it('when two users race for one free address, one gets it and the other 409', async () => {
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const token = await tokenOf(admin);
      const [a, b] = [await identity.createUser(), await identity.createUser()];
      const wanted = uniqueUsername('contested');
      const answers = await Promise.all([update(token, { userId: a.id, username: wanted }), update(token, { userId: b.id, username: wanted.toUpperCase() })]);
      assert.deepEqual(answers.map((res) => res.status).sort(), [200, 409]);
    });
  });
});
