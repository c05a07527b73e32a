import assert from 'node:assert/strict';
import request from 'supertest';
import type { Role } from '@platform/auth';
import { type IdentityHarness, type TestUser, startIdentity, uniqueUsername } from './support/identity-harness.ts';

describe('PATCH /v1/users/update', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity();
  });
  after(async () => {
    await identity.close();
  });

  const update = (token: string, body: object) =>
    request(identity.app).patch('/v1/users/update').set('Authorization', `Bearer ${token}`).send(body);
  const tokenOf = async (user: TestUser) => (await identity.login(user)).accessToken;

  // CONTRACT.md part 4: who may change which field. `self` is the target user with a plain role.
  const callers: Array<[string, Role[] | 'self']> = [
    ['the user themself', 'self'],
    ['another STANDARD_USER', ['STANDARD_USER']],
    ['a GUEST', ['GUEST']],
    ['an EXTENDED_USER', ['EXTENDED_USER']],
    ['a POWER_USER', ['POWER_USER']],
    ['an ADMIN', ['ADMIN']],
  ];
  const changes: Record<string, () => unknown> = {
    firstName: () => 'Changed',
    midName: () => 'Middle',
    lastName: () => 'Renamed',
    locale: () => 'de_DE',
    timezone: () => 'America/New_York',
    username: () => uniqueUsername('renamed'),
    password: () => 'a-brand-new-password',
    roles: () => ['API_USER'],
    status: () => 'INACTIVE',
  };
  const allowed = (caller: Role[] | 'self', field: string): boolean => {
    if (['password', 'roles', 'status'].includes(field)) return caller !== 'self' && caller.includes('ADMIN');
    return caller === 'self' || caller.includes('POWER_USER') || caller.includes('ADMIN');
  };

  for (const [callerName, caller] of callers) {
    for (const field of Object.keys(changes)) {
      const expected = allowed(caller, field) ? 200 : 403;
      it(`when ${callerName} changes ${field}, answers ${expected}`, async () => {
        const target = await identity.createUser();
        const actor = caller === 'self' ? target : await identity.createUser({ roles: caller });
        const value = changes[field]!();
        // A user renaming itself proves it knows its password (users-update-username.test.ts has the rules).
        const proof = field === 'username' && caller === 'self' ? { currentPassword: actor.password } : {};
        const res = await update(await tokenOf(actor), { userId: target.id, [field]: value, ...proof });
        assert.equal(res.status, expected, JSON.stringify(res.body));
        const stored = await identity.db('users').where({ id: target.id }).first();
        const column = { firstName: 'first_name', midName: 'mid_name', lastName: 'last_name' }[field] ?? field;
        if (field === 'password') {
          assert.equal(await identity.hasher.verify(String(value), stored.password_hash), expected === 200);
        } else if (expected === 200) {
          assert.deepEqual(stored[column], value);
          if (field !== 'password') assert.deepEqual(res.body[field], value);
        } else {
          assert.notDeepEqual(stored[column], value, 'a refused change leaves the row as it was');
        }
      });
    }
  }

  it('when a plain user names an unknown user, answers 403, not 404 (no enumeration); an ADMIN gets 404', async () => {
    const user = await identity.createUser();
    const missing = '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e';
    assert.equal((await update(await tokenOf(user), { userId: missing, firstName: 'X' })).status, 403);
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const res = await update(await tokenOf(admin), { userId: missing, firstName: 'X' });
    assert.equal(res.status, 404);
    assert.equal(res.body.message, 'User not found');
  });

  it('when `empty` is sent, accepts and ignores it', async () => {
    const user = await identity.createUser();
    const res = await update(await tokenOf(user), { userId: user.id, empty: true, lastName: 'Hopper' });
    assert.equal(res.status, 200);
    assert.equal(res.body.lastName, 'Hopper');
    assert.equal(res.body.empty, undefined);
  });

  it('when the new username is taken in another letter case, answers 409 and keeps the old one', async () => {
    const taken = await identity.createUser();
    const user = await identity.createUser();
    const res = await update(await tokenOf(user), { userId: user.id, username: taken.username.toUpperCase(), currentPassword: user.password });
    assert.equal(res.status, 409);
    assert.equal(res.body.message, 'Username already exists');
    assert.equal((await identity.db('users').where({ id: user.id }).first()).username, user.username);
  });

  it('when the timezone is unknown or the password longer than 72 bytes, answers 400', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const user = await identity.createUser();
    const token = await tokenOf(admin);
    assert.match((await update(token, { userId: user.id, timezone: 'Mars/Olympus' })).body.message, /timezone/);
    assert.match((await update(token, { userId: user.id, password: '€'.repeat(30) })).body.message, /72 bytes/);
  });

  it('when the user puts a control or bidi character into its own name, answers 400 and keeps the old name', async () => {
    const user = await identity.createUser();
    const token = await tokenOf(user);
    const before = await identity.db('users').where({ id: user.id }).first();
    for (const [field, value] of [['firstName', 'Eve\r\nAdmin'], ['midName', '\u001b]0;owned\u0007'], ['lastName', '\u202eevE'], ['firstName', 'Eve\u0085'], ['lastName', 'Eve\u2066']]) {
      const res = await update(token, { userId: user.id, [field!]: value });
      assert.equal(res.status, 400, `${field}=${JSON.stringify(value)}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.message, new RegExp(`body\\.${field} must match pattern`));
    }
    assert.deepEqual(await identity.db('users').where({ id: user.id }).first(), before);
  });

  it('when an ADMIN sets a new password, every session of the user ends', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const user = await identity.createUser();
    const session = await identity.login(user);
    assert.equal((await update(await tokenOf(admin), { userId: user.id, password: 'another-good-password' })).status, 200);
    assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: session.refreshToken })).status, 401);
    const oldAccess = await update(session.accessToken, { userId: user.id, firstName: 'Still' });
    assert.equal(oldAccess.status, 401, 'access tokens of the ended sessions stop working at once');
    assert.ok((await identity.login({ username: user.username, password: 'another-good-password' })).accessToken);
  });

  it('when an ADMIN sets a status other than ACTIVE, the user\'s sessions end; ACTIVE again clears the failure count', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const user = await identity.createUser();
    const session = await identity.login(user);
    const token = await tokenOf(admin);
    assert.equal((await update(token, { userId: user.id, status: 'EXPIRED' })).status, 200);
    assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: session.refreshToken })).status, 401);
    await identity.db('users').where({ id: user.id }).update({ failed_login_count: 6 });
    const res = await update(token, { userId: user.id, status: 'ACTIVE' });
    assert.equal(res.body.status, 'ACTIVE');
    assert.equal((await identity.db('users').where({ id: user.id }).first()).failed_login_count, 0);
  });

  const createUserWith = (token: string) =>
    request(identity.app)
      .post('/v1/users/create')
      .set('Authorization', `Bearer ${token}`)
      .send({ username: uniqueUsername('made'), firstName: 'M', lastName: 'U', locale: 'en_US', timezone: 'UTC', roles: ['ADMIN'], status: 'ACTIVE' });

  it('when an ADMIN demotes another ADMIN, that ADMIN\'s existing token is refused at once (401), not after it expires', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const demoted = await identity.createUser({ roles: ['ADMIN'] });
    const session = await identity.login(demoted);
    assert.equal((await createUserWith(session.accessToken)).status, 201, 'control: an ADMIN creates ADMINs');
    const res = await update(await tokenOf(admin), { userId: demoted.id, roles: ['STANDARD_USER'] });
    assert.equal(res.status, 200);
    const after = await createUserWith(session.accessToken);
    assert.equal(after.status, 401);
    assert.equal(after.body.message, 'Bad Credentials');
    assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: session.refreshToken })).status, 401);
    const fresh = await identity.login(demoted);
    assert.equal((await createUserWith(fresh.accessToken)).status, 403, 'a new login carries the new roles');
  });

  for (const [name, change] of [
    ['promotes a user', { roles: ['STANDARD_USER', 'POWER_USER'] }],
    ['blocks a user', { status: 'BLOCKED' }],
    ['sets a user INACTIVE', { status: 'INACTIVE' }],
  ] as const) {
    it(`when an ADMIN ${name}, every session of the user ends`, async () => {
      const admin = await identity.createUser({ roles: ['ADMIN'] });
      const user = await identity.createUser();
      const sessions = [await identity.login(user), await identity.login(user)];
      assert.equal((await update(await tokenOf(admin), { userId: user.id, ...change })).status, 200);
      for (const session of sessions) assert.equal((await update(session.accessToken, { userId: user.id, firstName: 'Still' })).status, 401);
      assert.equal((await identity.db('sessions').where({ user_id: user.id }).whereNull('revoked_at')).length, 0);
    });
  }

  it('when an ADMIN sends the roles and status the user already has, or only profile fields, the sessions stay', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const user = await identity.createUser({ roles: ['STANDARD_USER', 'API_USER'] });
    const session = await identity.login(user);
    const token = await tokenOf(admin);
    assert.equal((await update(token, { userId: user.id, roles: ['API_USER', 'STANDARD_USER'], status: 'ACTIVE' })).status, 200);
    assert.equal((await update(token, { userId: user.id, lastName: 'Unchanged-Roles' })).status, 200);
    assert.equal((await update(session.accessToken, { userId: user.id, firstName: 'Still' })).status, 200);
  });

  it('when a demotion races with the user\'s own requests, none of them is served with the old roles after the demotion answered', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const demoted = await identity.createUser({ roles: ['ADMIN'] });
    const session = await identity.login(demoted);
    const adminToken = await tokenOf(admin);
    const [demotion] = await Promise.all([
      update(adminToken, { userId: demoted.id, roles: ['GUEST'] }),
      ...Array.from({ length: 5 }, () => createUserWith(session.accessToken)),
    ]);
    assert.equal(demotion.status, 200);
    const afterwards = await Promise.all(Array.from({ length: 5 }, () => createUserWith(session.accessToken)));
    assert.deepEqual(afterwards.map((res) => res.status), [401, 401, 401, 401, 401]);
  });

  it('when the user has an account, embeds it without type and subscriptionPlan', async () => {
    const user = await identity.createUser();
    await identity.db('accounts').insert({ user_id: user.id, type: 'INDIVIDUAL', subscription_plan: 'TRIAL', location: 'İzmir' });
    const res = await update(await tokenOf(user), { userId: user.id, firstName: 'Hedy' });
    assert.equal(res.status, 200);
    assert.equal(res.body.account.location, 'İzmir');
    assert.equal(res.body.account.userId, user.id);
    assert.equal('type' in res.body.account, false);
    assert.equal('subscriptionPlan' in res.body.account, false);
  });
});
