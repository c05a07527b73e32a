import assert from 'node:assert/strict';
import request from 'supertest';
import { findUserById } from '../src/user-records/users.repository.ts';
import { type IdentityHarness, duringDemotion, startIdentity } from './support/identity-harness.ts';

describe('GET /v1/users/unblock/{userId}', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  async function blockedUser() {
    const user = await identity.createUser({ midName: 'Byron' });
    for (let i = 0; i < 6; i += 1) {
      await request(identity.app).post('/v1/auth/login').send({ username: user.username, password: 'wrong-password' });
    }
    assert.equal((await findUserById(identity.db, user.id))?.status, 'BLOCKED');
    return user;
  }

  const unblock = (userId: string, token = adminToken) =>
    request(identity.app).get(`/v1/users/unblock/${userId}`).set('Authorization', `Bearer ${token}`);

  it('made while the ADMIN\'s own row is held (a demotion in flight) and its session ends: 401, and the user stays BLOCKED', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const token = (await identity.login(admin)).accessToken;
    const user = await blockedUser();
    const res = await duringDemotion(identity.db, admin.id, () => unblock(user.id, token), 'the unblock never waited for the ADMIN\'s row');
    assert.equal(res.status, 401, `answered ${res.status}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.message, 'Bad Credentials');
    assert.equal((await findUserById(identity.db, user.id))?.status, 'BLOCKED', 'unblocked by an ADMIN demoted before it');
  });

  it('when an ADMIN unblocks a blocked user, answers 200 with the user ACTIVE, and the user can log in again', async () => {
    const user = await blockedUser();
    const res = await unblock(user.id);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      userId: user.id,
      username: user.username,
      firstName: 'Ada',
      midName: 'Byron',
      lastName: 'Lovelace',
      locale: 'en_US',
      timezone: 'Europe/Istanbul',
      roles: ['STANDARD_USER'],
      status: 'ACTIVE',
    });
    assert.equal((await findUserById(identity.db, user.id))?.failedLoginCount, 0);
    assert.equal((await request(identity.app).post('/v1/auth/login').send({ username: user.username, password: user.password })).status, 200);
  });

  it('when the user is neither BLOCKED nor ACTIVE (INACTIVE, EXPIRED, DELETED), answers 409 User is not blocked and changes and records nothing', async () => {
    for (const status of ['INACTIVE', 'EXPIRED', 'DELETED'] as const) {
      const user = await identity.createUser();
      await identity.db('users').where({ id: user.id }).update({ status, failed_login_count: 2 });
      const events = async () => (await identity.db('audit_events').where({ subject_user_id: user.id }).count<[{ count: string }]>('* as count'))[0]!.count;
      const eventsBefore = await events();
      const res = await unblock(user.id);
      assert.deepEqual([res.status, res.body.error, res.body.message], [409, 'Conflict', 'User is not blocked'], status);
      const after = await findUserById(identity.db, user.id);
      assert.deepEqual([after?.status, after?.failedLoginCount], [status, 2], `${status} is left as it was`);
      assert.equal(await events(), eventsBefore, `${status}: nothing recorded`);
    }
  });

  it('when the user is ACTIVE (a retried unblock), answers 200 with the user as it is, and changes and records nothing (CONTRACT.md part 4, amended)', async () => {
    const user = await identity.createUser();
    await identity.db('users').where({ id: user.id }).update({ failed_login_count: 2 });
    const events = async () => (await identity.db('audit_events').where({ subject_user_id: user.id }).count<[{ count: string }]>('* as count'))[0]!.count;
    const eventsBefore = await events();
    for (let i = 0; i < 2; i += 1) {
      const res = await unblock(user.id);
      assert.equal(res.status, 200);
      assert.deepEqual([res.body.userId, res.body.status], [user.id, 'ACTIVE']);
    }
    const after = await findUserById(identity.db, user.id);
    assert.deepEqual([after?.status, after?.failedLoginCount], ['ACTIVE', 2], 'left as it was, its failure count included');
    assert.equal(await events(), eventsBefore, 'nothing recorded');
  });

  it('when a blocked user is unblocked, records the status change and the unblock in the audit trail', async () => {
    const user = await blockedUser();
    assert.equal((await unblock(user.id)).status, 200);
    const rows = await identity.db('audit_events').where({ subject_user_id: user.id }).whereIn('type', ['user.status_changed', 'user.unblocked']).orderBy('type');
    assert.deepEqual(
      rows.map((row: { type: string; details: Record<string, unknown> }) => [row.type, row.details]),
      [
        ['user.status_changed', { previousStatus: 'BLOCKED', newStatus: 'ACTIVE' }],
        ['user.unblocked', { previousStatus: 'BLOCKED', previousFailedLoginCount: 6 }],
      ],
    );
  });

  it('when the user has an account, embeds it in full, with type and subscriptionPlan', async () => {
    const user = await blockedUser();
    const [account] = await identity.db('accounts')
      .insert({ user_id: user.id, type: 'ORGANIZATION', subscription_plan: 'PREMIUM_YEARLY', company: 'Analytical Engines' })
      .returning(['id', 'created_at', 'updated_at']);
    const res = await unblock(user.id);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.account, {
      id: account.id,
      userId: user.id,
      type: 'ORGANIZATION',
      subscriptionPlan: 'PREMIUM_YEARLY',
      company: 'Analytical Engines',
      emailVerified: false,
      mobilePhoneNumberVerified: false,
      createdAt: account.created_at.toISOString(),
      updatedAt: account.updated_at.toISOString(),
    });
  });

  it('when the caller is not an ADMIN, answers 403 Forbidden and changes nothing', async () => {
    const user = await blockedUser();
    const powerUser = await identity.createUser({ roles: ['POWER_USER', 'EXTENDED_USER'] });
    const res = await unblock(user.id, (await identity.login(powerUser)).accessToken);
    assert.equal(res.status, 403);
    assert.equal(res.body.error, 'Forbidden');
    assert.equal((await findUserById(identity.db, user.id))?.status, 'BLOCKED');
  });

  it('when no token is sent, answers 401 Bad Credentials', async () => {
    const res = await request(identity.app).get('/v1/users/unblock/8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e');
    assert.equal(res.status, 401);
    assert.equal(res.body.message, 'Bad Credentials');
  });

  it('when no user has the id, answers 404; when the id is not a uuid, answers 400', async () => {
    const missing = await unblock('8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.message, 'User not found');
    const malformed = await unblock('42');
    assert.equal(malformed.status, 400);
  });
});
