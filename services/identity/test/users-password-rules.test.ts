import assert from 'node:assert/strict';
import request from 'supertest';
import { type IdentityHarness, startIdentity, uniqueUsername } from './support/identity-harness.ts';

const TOO_COMMON = 'Password is too common';

describe('password rules: common passwords and the username are refused (create, update, reset)', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const asAdmin = (method: 'post' | 'patch', path: string, body: object) =>
    request(identity.app)[method](path).set('Authorization', `Bearer ${adminToken}`).send(body);
  const newUser = (username: string, password: string) =>
    asAdmin('post', '/v1/users/create', { username, password, firstName: 'P', lastName: 'R', locale: 'en_US', timezone: 'UTC', roles: ['STANDARD_USER'], status: 'ACTIVE' });
  const resetTicket = async (username: string) => (await asAdmin('post', '/v1/users/password-reset-request', { username })).body.token as string;

  function assertTooCommon(res: request.Response, what: string): void {
    assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error, 'Bad Request', what);
    assert.equal(res.body.message, TOO_COMMON, what);
  }

  // 'password' and '12345678' rank 2nd and 3rd; 'iloveyou' and 'sunshine' are in the first hundred; case does not help.
  const common = ['password', '12345678', 'iloveyou', 'Sunshine', 'PASSWORD', 'qwertyuiop'];

  for (const password of common) {
    it(`when an ADMIN creates a user with the password "${password}", answers 400 Password is too common and stores nothing`, async () => {
      const username = uniqueUsername('common');
      assertTooCommon(await newUser(username, password), password);
      assert.equal((await identity.db('users').where({ username })).length, 0);
    });
  }

  it('when the password equals the username or its local part (in any case), answers 400 Password is too common', async () => {
    const local = `Grace.Hopper.${Date.now()}`;
    const username = `${local}@example.com`;
    for (const password of [username, username.toUpperCase(), local, local.toLowerCase()]) assertTooCommon(await newUser(username, password), password);
  });

  it('when the password is long, rare and not the username, answers 201 (control)', async () => {
    const res = await newUser(uniqueUsername('rare'), 'correct horse battery staple 42');
    assert.equal(res.status, 201, JSON.stringify(res.body));
  });

  it('when an ADMIN sets a common password or the user\'s own username on update, answers 400 and the old password still works', async () => {
    const user = await identity.createUser();
    const local = user.username.slice(0, user.username.indexOf('@'));
    for (const password of ['password', '12345678', user.username, local.toUpperCase()]) {
      assertTooCommon(await asAdmin('patch', '/v1/users/update', { userId: user.id, password }), password);
    }
    const renamed = uniqueUsername('renamed');
    assertTooCommon(await asAdmin('patch', '/v1/users/update', { userId: user.id, username: renamed, password: renamed }), 'the new username');
    assert.equal((await identity.db('users').where({ id: user.id }).first()).username, user.username, 'nothing of the refused update was kept');
    assert.ok((await identity.login(user)).accessToken);
  });

  it('when a reset sets a common password or the username, answers 400 without using up the token', async () => {
    const user = await identity.createUser();
    const token = await resetTicket(user.username);
    for (const newPassword of ['password', '12345678', user.username]) {
      assertTooCommon(await request(identity.app).post('/v1/users/password-reset').send({ userId: user.id, token, newPassword }), newPassword);
    }
    assert.ok((await identity.login(user)).accessToken, 'the password did not change');
    const ok = await request(identity.app).post('/v1/users/password-reset').send({ userId: user.id, token, newPassword: 'a-rare-new-passphrase-7' });
    assert.equal(ok.status, 200, 'the token still works');
  });

  it('when a reset with a made-up token sends a common password, answers 400 either way and changes nothing', async () => {
    const user = await identity.createUser();
    const res = await request(identity.app).post('/v1/users/password-reset').send({ userId: user.id, token: 'made-up', newPassword: user.username });
    assert.equal(res.status, 400);
    assert.equal(res.body.message, 'The password reset token is invalid, used or expired', 'the username rule is checked only for a live token');
    assert.ok((await identity.login(user)).accessToken);
  });
});
