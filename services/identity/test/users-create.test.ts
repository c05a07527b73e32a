import assert from 'node:assert/strict';
import request from 'supertest';
import { type IdentityHarness, duringDemotion, startIdentity, uniqueUsername } from './support/identity-harness.ts';

describe('POST /v1/users/create', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const newUser = (fields: Record<string, unknown> = {}) => ({
    username: uniqueUsername('new'),
    password: 'a-good-password',
    firstName: 'Katherine',
    midName: 'Coleman',
    lastName: 'Johnson',
    locale: 'tr_TR',
    timezone: 'Europe/Istanbul',
    roles: ['STANDARD_USER', 'API_USER'],
    status: 'ACTIVE',
    ...fields,
  });
  const create = (body: object, token = adminToken) =>
    request(identity.app).post('/v1/users/create').set('Authorization', `Bearer ${token}`).send(body);

  it('made while the ADMIN\'s own row is held (a demotion in flight) and its session ends: 401, and no user is made', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const token = (await identity.login(admin)).accessToken;
    const body = newUser({ roles: ['ADMIN'] });
    const res = await duringDemotion(identity.db, admin.id, () => create(body, token), 'the creation never waited for the ADMIN\'s row');
    assert.equal(res.status, 401, `answered ${res.status}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.message, 'Bad Credentials');
    assert.equal(await identity.db('users').whereRaw('lower(username) = lower(?)', [body.username]).first('id'), undefined, 'made by an ADMIN demoted before it');
  });

  it('when an ADMIN sends a valid user, answers 201 with the User, who can then log in', async () => {
    const body = newUser();
    const res = await create(body);
    assert.equal(res.status, 201);
    const { userId, ...rest } = res.body;
    assert.match(userId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(rest, {
      username: body.username,
      firstName: 'Katherine',
      midName: 'Coleman',
      lastName: 'Johnson',
      locale: 'tr_TR',
      timezone: 'Europe/Istanbul',
      roles: ['STANDARD_USER', 'API_USER'],
      status: 'ACTIVE',
    });
    assert.equal(res.body.account, undefined, 'a new user has no account');
    const stored = await identity.db('users').where({ id: userId }).first();
    assert.notEqual(stored.password_hash, body.password);
    assert.ok(await identity.hasher.verify(body.password, stored.password_hash));
    assert.ok((await identity.login({ username: body.username, password: body.password })).accessToken);
  });

  it('when no password is given, creates the user without one (login refused until a reset)', async () => {
    const { password: _none, ...body } = newUser();
    const res = await create(body);
    assert.equal(res.status, 201);
    const stored = await identity.db('users').where({ id: res.body.userId }).first();
    assert.equal(stored.password_hash, null);
  });

  it('when the username exists in another letter case, answers 409 Username already exists', async () => {
    const body = newUser();
    assert.equal((await create(body)).status, 201);
    const res = await create(newUser({ username: body.username.toUpperCase() }));
    assert.equal(res.status, 409);
    assert.equal(res.body.error, 'Conflict');
    assert.equal(res.body.message, 'Username already exists');
  });

  it('when 8 creates of one username race, exactly one answers 201 and the rest 409', async () => {
    const username = uniqueUsername('race');
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => create(newUser({ username: i % 2 === 0 ? username : username.toUpperCase() }))),
    );
    const statuses = answers.map((res) => res.status).sort();
    assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
    const rows = await identity.db('users').where({ username });
    assert.equal(rows.length, 1);
  });

  const invalid: Array<[string, Record<string, unknown>, RegExp]> = [
    ['an unknown tz database name', { timezone: 'Europe/Atlantis' }, /body\.timezone must be a tz database name/],
    ['a password of more than 72 UTF-8 bytes', { password: 'ü'.repeat(40) }, /body\.password must be 8 to 72 bytes/],
    ['a password of 7 characters', { password: 'short12' }, /body\.password/],
    ['a locale not shaped <language>_<COUNTRY>', { locale: 'en-US' }, /body\.locale/],
    ['a username that is not an e-mail', { username: 'not-an-email' }, /body\.username/],
    ['an unknown role', { roles: ['KING'] }, /body\.roles/],
    ['no roles', { roles: [] }, /body\.roles/],
    ['an unknown field', { nickname: 'kj' }, /additional properties/],
  ];
  for (const [name, fields, message] of invalid) {
    it(`when the body has ${name}, answers 400 naming it and stores nothing`, async () => {
      const body = newUser(fields);
      const res = await create(body);
      assert.equal(res.status, 400);
      assert.match(res.body.message, message);
      assert.equal((await identity.db('users').where({ first_name: 'Katherine', username: String(body.username) })).length, 0);
    });
  }

  // The characters a terminal or a screen acts on instead of showing (security review: forged rows in the
  // operators' CLI, a changed window title, text reordered by a bidi override).
  const controls: Array<[string, string]> = [
    ['ESC', '\u001b[2J'],
    ['CR', 'Eve\rAdmin'],
    ['LF', 'Eve\nAdmin'],
    ['BEL', 'Eve\u0007'],
    ['TAB', 'Eve\tAdmin'],
    ['DEL', 'Eve\u007f'],
    ['a C1 control (CSI)', 'Eve\u009b31m'],
    ['a line separator', 'Eve\u2028Admin'],
    ['a right-to-left override', '\u202eevE'],
    ['a right-to-left isolate', 'Eve\u2067x\u2069'],
    ['a left-to-right mark', 'Eve\u200e'],
    ['an Arabic letter mark', 'Eve\u061c'],
  ];
  for (const field of ['firstName', 'midName', 'lastName']) {
    it(`when ${field} carries a control or bidi character (ESC, CR, LF, BEL, TAB, DEL, C1, U+2028, bidi), answers 400 naming it and stores nothing`, async () => {
      for (const [name, value] of controls) {
        const body = newUser({ [field]: value });
        const res = await create(body);
        assert.equal(res.status, 400, `${name}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error, 'Bad Request');
        assert.match(res.body.message, new RegExp(`body\\.${field} must match pattern`));
        assert.equal((await identity.db('users').where({ username: String(body.username) })).length, 0, name);
      }
    });
  }

  it('when names are in Turkish, Arabic or Persian (with a zero-width non-joiner) or carry an emoji, answers 201 and keeps them as sent', async () => {
    const body = newUser({ firstName: 'Ayşe Gül', midName: 'مهدی\u200cزاده', lastName: 'İğdır 😀' });
    const res = await create(body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual([res.body.firstName, res.body.midName, res.body.lastName], ['Ayşe Gül', 'مهدی\u200cزاده', 'İğdır 😀']);
  });

  it('when the caller is not an ADMIN, answers 403; without a token, 401', async () => {
    const powerUser = await identity.createUser({ roles: ['POWER_USER', 'EXTENDED_USER'] });
    const body = newUser();
    const forbidden = await create(body, (await identity.login(powerUser)).accessToken);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.error, 'Forbidden');
    const anonymous = await request(identity.app).post('/v1/users/create').send(body);
    assert.equal(anonymous.status, 401);
    assert.equal((await identity.db('users').where({ username: body.username })).length, 0);
  });
});
