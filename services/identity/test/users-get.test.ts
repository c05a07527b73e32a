import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Role } from '@platform/auth';
import request from 'supertest';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

const NON_ADMIN_ROLES: readonly Role[] = ['GUEST', 'API_USER', 'STANDARD_USER', 'POWER_USER', 'EXTENDED_USER'];

describe('GET /v1/users/{userId}', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const read = (userId: string, token?: string) => {
    const req = request(identity.app).get(`/v1/users/${userId}`);
    return token === undefined ? req : req.set('Authorization', `Bearer ${token}`);
  };

  it('the user itself reads itself with its full account; an ADMIN reads anyone, whatever the letter case of the id', async () => {
    const user = await identity.createUser({ roles: ['GUEST'] });
    const [account] = await identity.db('accounts').insert({ user_id: user.id, type: 'INDIVIDUAL', subscription_plan: 'BASIC_MONTHLY', mobile_phone_number: '+905321234567' }).returning(['id', 'created_at', 'updated_at']);
    const expected = {
      userId: user.id,
      username: user.username,
      firstName: 'Ada',
      lastName: 'Lovelace',
      locale: 'en_US',
      timezone: 'Europe/Istanbul',
      roles: ['GUEST'],
      status: 'ACTIVE',
      account: {
        id: account.id,
        userId: user.id,
        type: 'INDIVIDUAL',
        subscriptionPlan: 'BASIC_MONTHLY',
        mobilePhoneNumber: '+905321234567',
        emailVerified: false,
        mobilePhoneNumberVerified: false,
        createdAt: account.created_at.toISOString(),
        updatedAt: account.updated_at.toISOString(),
      },
    };
    const self = await read(user.id, (await identity.login(user)).accessToken);
    assert.deepEqual([self.status, self.body], [200, expected]);
    const byAdmin = await read(user.id.toUpperCase(), adminToken);
    assert.deepEqual([byAdmin.status, byAdmin.body], [200, expected]);
  });

  it('a user without an account: no account field', async () => {
    const user = await identity.createUser();
    const res = await read(user.id, adminToken);
    assert.equal(res.status, 200);
    assert.equal('account' in res.body, false);
  });

  it('any other role reading another user gets 403, whether or not the user exists; an ADMIN gets 404 for an unknown one', async () => {
    const victim = await identity.createUser();
    for (const role of NON_ADMIN_ROLES) {
      const token = await identity.tokenFor([role]);
      for (const userId of [victim.id, randomUUID()]) {
        const res = await read(userId, token);
        assert.equal(res.status, 403, `${role} ${userId}`);
        assert.equal(res.body.error, 'Forbidden');
      }
    }
    const unknown = await read(randomUUID(), adminToken);
    assert.deepEqual([unknown.status, unknown.body.message], [404, 'User not found']);
  });

  it('without a token, or with a bad one, answers 401', async () => {
    const user = await identity.createUser();
    assert.equal((await read(user.id)).status, 401);
    assert.equal((await read(user.id, 'not.a.token')).status, 401);
  });

  it('an id that is not a uuid answers 400', async () => {
    for (const id of ['42', 'urn:uuid:8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e', 'unblock', '%20', 'me']) {
      const res = await read(id, adminToken);
      assert.equal(res.status, 400, id);
      assert.equal(res.body.path, `/v1/users/${id}`);
    }
  });

  it('the literal paths beside it keep their own operations: GET answers 405 with their Allow, never a user', async () => {
    const expected: Array<[string, string]> = [
      ['/v1/users/create', 'POST'],
      ['/v1/users/update', 'PATCH'],
      ['/v1/users/password-reset', 'POST'],
      ['/v1/users/password-reset-request', 'POST'],
    ];
    for (const [path, allow] of expected) {
      for (let i = 0; i < 2; i += 1) {
        const res = await request(identity.app).get(path).set('Authorization', `Bearer ${adminToken}`);
        assert.deepEqual([res.status, res.headers.allow, res.body.status, res.body.path], [405, allow, 405, path], path);
      }
    }
    const other = await request(identity.app).delete(`/v1/users/${randomUUID()}`).set('Authorization', `Bearer ${adminToken}`).send({ x: 1 });
    assert.deepEqual([other.status, other.headers.allow], [405, 'GET']);
  });
});
