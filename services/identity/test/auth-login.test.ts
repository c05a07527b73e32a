import assert from 'node:assert/strict';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { findUserById } from '../src/user-records/users.repository.ts';
import { type IdentityHarness, startIdentity, uniqueUsername } from './support/identity-harness.ts';

/** An error body without its timestamp, so two answers can be compared whole. */
function comparable(body: Record<string, unknown>): Record<string, unknown> {
  const { timestamp, ...rest } = body;
  assert.ok(!Number.isNaN(Date.parse(String(timestamp))), 'timestamp is a date');
  return rest;
}

const BAD_CREDENTIALS = { status: 401, error: 'Unauthorized', message: 'Bad Credentials', path: '/v1/auth/login' };

describe('POST /v1/auth/login', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity();
  });
  after(async () => {
    await identity.close();
  });

  const login = (username: string, password: string, address = '10.0.0.1') =>
    request(identity.app).post('/v1/auth/login').set(identity.viaGateway('POST', '/v1/auth/login', { address })).send({ username, password });

  it('when the credentials are right, answers 200 with a bearer access token carrying the contract claims', async () => {
    const user = await identity.createUser({ roles: ['STANDARD_USER', 'POWER_USER'] });
    const res = await login(user.username.toUpperCase(), user.password);
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['accessToken', 'refreshToken', 'type', 'username']);
    assert.equal(res.body.type, 'Bearer');
    assert.equal(res.body.username, user.username, 'the stored spelling, not the typed one');
    assert.match(res.body.refreshToken, /^[A-Za-z0-9_-]{43}$/, '256 random bits, base64url');

    const decoded = jwt.decode(res.body.accessToken, { complete: true });
    assert.ok(decoded !== null && typeof decoded.payload === 'object');
    assert.equal(decoded.header.alg, 'ES256');
    assert.equal(decoded.header.kid, identity.signingKey.kid);
    const claims = decoded.payload;
    assert.equal(claims.sub, user.id);
    assert.equal(claims.username, user.username);
    assert.deepEqual(claims.roles, ['STANDARD_USER', 'POWER_USER']);
    assert.equal(claims.iss, identity.config.TOKEN_ISSUER);
    assert.equal(claims.aud, identity.config.JWT_AUDIENCE);
    assert.equal(claims.exp! - claims.iat!, 900, '15 minutes by default');
    assert.match(String(claims.sid), /^[0-9a-f-]{36}$/);
    assert.match(String(claims.jti), /^[0-9a-f-]{36}$/);
    const session = await identity.db('sessions').where({ id: claims.sid }).first();
    assert.equal(session.user_id, user.id);
  });

  it('when the user is unknown, the password wrong or the user not ACTIVE, answers the same 401 Bad Credentials', async () => {
    const active = await identity.createUser();
    const bodies = [
      (await login(uniqueUsername('nobody'), 'whatever-password')).body,
      (await login(active.username, `${active.password}x`)).body,
    ];
    for (const status of ['INACTIVE', 'EXPIRED', 'BLOCKED', 'DELETED'] as const) {
      const user = await identity.createUser({ status });
      const res = await login(user.username, user.password);
      assert.equal(res.status, 401, status);
      bodies.push(res.body);
    }
    for (const body of bodies) assert.deepEqual(comparable(body), BAD_CREDENTIALS);
  });

  it('when the user has no password yet, answers 401 Bad Credentials', async () => {
    const user = await identity.createUser();
    await identity.db('users').where({ id: user.id }).update({ password_hash: null });
    const res = await login(user.username, user.password);
    assert.deepEqual(comparable(res.body), BAD_CREDENTIALS);
  });

  it('allows 5 failed logins; a good login still works and resets the count', async () => {
    const user = await identity.createUser();
    for (let i = 0; i < 5; i += 1) assert.equal((await login(user.username, 'wrong-password')).status, 401);
    assert.equal((await findUserById(identity.db, user.id))?.failedLoginCount, 5);
    assert.equal((await login(user.username, user.password)).status, 200);
    const after = await findUserById(identity.db, user.id);
    assert.equal(after?.failedLoginCount, 0);
    assert.equal(after?.status, 'ACTIVE');
  });

  it('when the 6th consecutive login fails, blocks the user permanently and e-mails the owner once', async () => {
    const user = await identity.createUser({ firstName: 'Grace' });
    const mailsBefore = identity.mail.received.length;
    for (let i = 0; i < 5; i += 1) await login(user.username, 'wrong-password');
    assert.equal((await findUserById(identity.db, user.id))?.status, 'ACTIVE', 'five failures are allowed');
    await login(user.username, 'wrong-password');
    assert.equal((await findUserById(identity.db, user.id))?.status, 'BLOCKED');

    const right = await login(user.username, user.password);
    assert.deepEqual(comparable(right.body), BAD_CREDENTIALS, 'the right password does not open a blocked user');
    await login(user.username, 'wrong-password');

    const [mail] = (await identity.mail.waitFor(mailsBefore + 1)).slice(mailsBefore);
    assert.equal(mail!.method, 'POST');
    assert.deepEqual(Object.keys(mail!.body as object).sort(), ['subject', 'text', 'to']);
    const body = mail!.body as { to: string; subject: string; text: string };
    assert.equal(body.to, user.username);
    assert.match(body.subject, /blocked/i);
    assert.match(body.text, /Grace/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(identity.mail.received.filter((m) => (m.body as { to: string }).to === user.username).length, 1, 'one mail per block');
  });

  it('when the block follows failed logins, the user\'s existing sessions end at once: access and refresh tokens answer 401', async () => {
    const user = await identity.createUser();
    const sessions = [await identity.login(user), await identity.login(user)];
    const read = (token: string) => request(identity.app).get(`/v1/accounts/${user.id}`).set('Authorization', `Bearer ${token}`);
    assert.equal((await read(sessions[0]!.accessToken)).status, 404, 'the token works before the block (the user has no account)');
    for (let i = 0; i < 6; i += 1) await login(user.username, 'wrong-password');
    assert.equal((await findUserById(identity.db, user.id))?.status, 'BLOCKED');
    for (const session of sessions) {
      assert.equal((await read(session.accessToken)).status, 401);
      assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: session.refreshToken })).status, 401);
    }
    const reasons = await identity.db('sessions').where({ user_id: user.id }).pluck('revoked_reason');
    assert.deepEqual(reasons, ['user-blocked', 'user-blocked']);
  });

  it('when 10 wrong passwords arrive at once, counts exactly 10 and blocks', async () => {
    const user = await identity.createUser();
    const answers = await Promise.all(Array.from({ length: 10 }, () => login(user.username, 'wrong-password')));
    assert.deepEqual(
      answers.map((res) => res.status),
      Array(10).fill(401),
    );
    const after = await findUserById(identity.db, user.id);
    assert.equal(after?.failedLoginCount, 10);
    assert.equal(after?.status, 'BLOCKED');
  });

  describe('when a change of the user commits while its password is being checked (the user row is locked meanwhile)', () => {
    /**
     * Holds the user's row locked (as an ADMIN's update does), starts a login, lets the login wait on the
     * lock, then applies `change` and commits: the login must see the user as the change left it.
     */
    async function loginRacing(user: { id: string; username: string; password: string }, change: Record<string, unknown>) {
      const trx = await identity.db.transaction();
      try {
        await trx('users').where({ id: user.id }).forUpdate().first('id');
        const pending = login(user.username, user.password);
        const answer = pending.then((res) => res);
        // The password check runs, then the login waits on the row lock.
        await new Promise((resolve) => setTimeout(resolve, 300));
        await trx('users').where({ id: user.id }).update(change);
        await trx.commit();
        return await answer;
      } catch (err) {
        await trx.rollback().catch(() => undefined);
        throw err;
      }
    }

    it('a demotion: the token carries the roles the user has now, not those read before the password check', async () => {
      const user = await identity.createUser({ roles: ['ADMIN'] });
      const res = await loginRacing(user, { roles: ['STANDARD_USER'] });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const claims = jwt.decode(res.body.accessToken) as { roles: string[] };
      assert.deepEqual(claims.roles, ['STANDARD_USER']);
      const list = await request(identity.app).get('/v1/users').set('Authorization', `Bearer ${res.body.accessToken}`);
      assert.equal(list.status, 403, 'the token still acts as an ADMIN');
    });

    it('a block or a new password: the login is refused with 401 Bad Credentials and opens no session', async () => {
      for (const change of [{ status: 'BLOCKED' }, { password_hash: await identity.hasher.hash('another-password-1') }]) {
        const user = await identity.createUser();
        const res = await loginRacing(user, change);
        assert.equal(res.status, 401, `${JSON.stringify(change)}: ${JSON.stringify(res.body)}`);
        assert.deepEqual(comparable(res.body), BAD_CREDENTIALS);
        assert.equal((await identity.db('sessions').where({ user_id: user.id }).count<Array<{ count: string }>>('* as count'))[0]!.count, '0');
      }
    });
  });

  it('never writes the password, its hash or the issued tokens to the log', async () => {
    const user = await identity.createUser();
    const good = await login(user.username, user.password);
    await login(user.username, 'another-wrong-secret');
    await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: good.body.refreshToken });
    await request(identity.app).post('/v1/auth/logout').send({ jwtToken: good.body.accessToken });
    const log = identity.log.text();
    assert.ok(log.includes(user.id) || log.includes('/v1/auth/login'), 'the log was captured');
    for (const secret of [user.password, 'another-wrong-secret', user.passwordHash!, good.body.accessToken, good.body.refreshToken]) {
      assert.ok(!log.includes(secret), `a secret reached the log: ${secret.slice(0, 12)}…`);
    }
  });
});

describe('POST /v1/auth/login throttling', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity({ LOGIN_FAILURES_PER_MIN: '3' });
  });
  after(async () => {
    await identity.close();
  });

  it('when one source address fails 3 times in a minute, answers 429 Too many login attempts with Retry-After', async () => {
    const address = '192.0.2.10';
    const users = await Promise.all([identity.createUser(), identity.createUser(), identity.createUser(), identity.createUser()]);
    for (const user of users.slice(0, 3)) {
      const res = await request(identity.app).post('/v1/auth/login').set(identity.viaGateway('POST', '/v1/auth/login', { address })).send({ username: user.username, password: 'wrong-password' });
      assert.equal(res.status, 401);
    }
    const res = await request(identity.app)
      .post('/v1/auth/login')
      .set(identity.viaGateway('POST', '/v1/auth/login', { address }))
      .send({ username: users[3]!.username, password: users[3]!.password });
    assert.equal(res.status, 429);
    assert.equal(res.body.message, 'Too many login attempts');
    const retryAfter = Number(res.headers['retry-after']);
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers['retry-after']}`);
    assert.equal((await findUserById(identity.db, users[3]!.id))?.failedLoginCount, 0, 'a throttled attempt is not counted on the user');

    const elsewhere = await request(identity.app)
      .post('/v1/auth/login')
      .set(identity.viaGateway('POST', '/v1/auth/login', { address: '192.0.2.11' }))
      .send({ username: users[3]!.username, password: users[3]!.password });
    assert.equal(elsewhere.status, 200, 'another address is not affected');
  });

  it('a login whose password was right is not counted, though it held its place while its compare ran', async () => {
    const address = '192.0.2.12';
    const user = await identity.createUser();
    const attempt = (password: string) =>
      request(identity.app).post('/v1/auth/login').set(identity.viaGateway('POST', '/v1/auth/login', { address })).send({ username: user.username, password }).then((res) => res.status);
    const statuses: number[] = [];
    for (const password of ['wrong-password', user.password, user.password, 'wrong-password', user.password, 'wrong-password']) statuses.push(await attempt(password));
    assert.deepEqual(statuses, [401, 200, 200, 401, 200, 401]);
    assert.equal(await attempt(user.password), 429, 'three failures are the limit, whatever succeeded between them');
  });

  it('when one client key fails 3 times in a minute from many addresses, answers 429', async () => {
    const user = await identity.createUser();
    for (let i = 0; i < 3; i += 1) {
      await request(identity.app)
        .post('/v1/auth/login')
        .set(identity.viaGateway('POST', '/v1/auth/login', { address: `198.51.100.${i}`, clientKeyId: 'bulk-client' }))
        .send({ username: user.username, password: 'wrong-password' });
    }
    const res = await request(identity.app)
      .post('/v1/auth/login')
      .set(identity.viaGateway('POST', '/v1/auth/login', { address: '198.51.100.200', clientKeyId: 'bulk-client' }))
      .send({ username: user.username, password: user.password });
    assert.equal(res.status, 429);
    const otherKey = await request(identity.app)
      .post('/v1/auth/login')
      .set(identity.viaGateway('POST', '/v1/auth/login', { address: '198.51.100.201', clientKeyId: 'another-client' }))
      .send({ username: user.username, password: user.password });
    assert.equal(otherKey.status, 200);
  });
});

describe('POST /v1/auth/login throttling under a flood', () => {
  let identity: IdentityHarness;

  before(async () => {
    // One thread and hashes of tens of milliseconds: every login of the flood has arrived (and passed the
    // throttle's look at arrival) before the first failure is counted. A deadline far enough that none is
    // refused busy on a loaded machine (the hashing thread runs at a lower priority than other processes).
    identity = await startIdentity({ LOGIN_FAILURES_PER_MIN: '3', BCRYPT_COST: '10', REQUEST_DEADLINE_MS: '60000' });
  });
  after(async () => {
    await identity.close();
  });

  it('fourteen wrong logins at once from one address: failures beyond the limit are refused 429 when their turn comes, not checked', async () => {
    const address = '192.0.2.40';
    const answers = await Promise.all(
      Array.from({ length: 14 }, () =>
        request(identity.app)
          .post('/v1/auth/login')
          .set(identity.viaGateway('POST', '/v1/auth/login', { address }))
          .send({ username: uniqueUsername(), password: 'wrong-password' }),
      ),
    );
    const statuses = answers.map((res) => res.status);
    assert.ok(
      statuses.every((status) => status === 401 || status === 429),
      `only 401 and 429: ${statuses.join(' ')}`,
    );
    const checked = statuses.filter((status) => status === 401).length;
    // Each check is counted when its compare is to start: the limit exactly, whatever ran at once.
    assert.equal(checked, 3, `${checked} failed logins checked against a limit of 3: ${statuses.join(' ')}`);
    for (const res of answers.filter((answer) => answer.status === 429)) {
      assert.equal(res.body.message, 'Too many login attempts');
      assert.ok(Number(res.headers['retry-after']) >= 1);
    }
  });
});

describe('POST /v1/auth/login under load', () => {
  let identity: IdentityHarness;

  before(async () => {
    // A cost where one hash takes ~250 ms: hashed on the event loop, it would stall the process that long.
    // The deadline far: a loaded machine slows the hashing thread, which yields to every other, several times
    // (six hashes in a row then outlast the default 8 s), and what is judged here is the event loop.
    identity = await startIdentity({ BCRYPT_COST: '12', REQUEST_DEADLINE_MS: '60000' });
  });
  after(async () => {
    await identity.close();
  });

  it('while 6 logins hash passwords, the event loop never stalls for the length of a hash', async function () {
    this.timeout(60_000);
    const user = await identity.createUser();
    const oneHashMs = await (async () => {
      const started = performance.now();
      await identity.hasher.verify(user.password, user.passwordHash);
      return performance.now() - started;
    })();
    const histogram = monitorEventLoopDelay({ resolution: 5 });
    histogram.enable();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => request(identity.app).post('/v1/auth/login').send({ username: user.username, password: user.password })),
    );
    histogram.disable();
    assert.deepEqual(
      answers.map((res) => res.status),
      Array(6).fill(200),
    );
    const worstStallMs = histogram.max / 1e6;
    assert.ok(worstStallMs < oneHashMs * 0.8, `event loop stalled ${worstStallMs.toFixed(0)} ms; one hash takes ${oneHashMs.toFixed(0)} ms`);
  });
});
