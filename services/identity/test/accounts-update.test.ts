import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import type { Role } from '@platform/auth';
import { type IdentityHarness, duringDemotion, startIdentity } from './support/identity-harness.ts';

const UNKNOWN_ACCOUNT_ID = '3d6f0a4e-2b1c-4e8f-9a7d-5c4b3a2f1e0d';

describe('PATCH /v1/accounts/update', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const update = (token: string | undefined, body: Record<string, unknown>) => {
    const req = request(identity.app).patch('/v1/accounts/update');
    if (token !== undefined) req.set('Authorization', `Bearer ${token}`);
    return req.send(body);
  };

  /** A fresh user with an account made through the API, and the user's access token. */
  async function owner(account: Record<string, unknown> = {}, roles: Role[] = ['STANDARD_USER']) {
    const user = await identity.createUser({ roles });
    const token = (await identity.login(user)).accessToken;
    const created = await request(identity.app)
      .post('/v1/accounts/create')
      .set('Authorization', `Bearer ${token}`)
      .send({ userId: user.id, type: 'INDIVIDUAL', company: 'Analytical Engines', mobilePhoneNumber: '+905321234567', ...account });
    assert.equal(created.status, 201);
    return { user, token, account: created.body as Record<string, unknown> & { id: string; createdAt: string; updatedAt: string } };
  }

  const accountRow = (id: string) => identity.db('accounts').where({ id }).first();
  const markPhoneVerified = (id: string) => identity.db('accounts').where({ id }).update({ mobile_phone_number_verified: true });

  it('made on another user\'s account while the ADMIN\'s own row is held (a demotion in flight) and its session ends: 401, and the account stays as it was', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const token = (await identity.login(admin)).accessToken;
    const { account } = await owner();
    const res = await duringDemotion(identity.db, admin.id, () => update(token, { accountId: account.id, mobilePhoneNumber: '+905559876543' }), 'the update never waited for the ADMIN\'s row');
    assert.equal(res.status, 401, `answered ${res.status}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.message, 'Bad Credentials');
    assert.equal((await accountRow(account.id)).mobile_phone_number, '+905321234567', 'changed by an ADMIN demoted before it');
  });

  it('when the owner changes fields, answers 200 with the changes and a later updatedAt kept by the database', async () => {
    const { token, account } = await owner();
    await sleep(20);
    const res = await update(token, { accountId: account.id, type: 'ORGANIZATION', location: 'Ankara', industry: 'Weather', profilePictureUrl: 'https://cdn.example.com/p.png' });
    assert.equal(res.status, 200);
    const { updatedAt, ...rest } = res.body;
    const { updatedAt: before, ...unchanged } = account;
    assert.deepEqual(rest, { ...unchanged, type: 'ORGANIZATION', location: 'Ankara', industry: 'Weather', profilePictureUrl: 'https://cdn.example.com/p.png' });
    assert.ok(Date.parse(updatedAt) > Date.parse(before), `updatedAt ${updatedAt} is after ${before}`);
    assert.equal(res.body.createdAt, account.createdAt);
    const row = await accountRow(account.id);
    assert.equal(row.updated_at.toISOString(), updatedAt);
    assert.equal(row.type, 'ORGANIZATION');
    assert.equal(row.subscription_plan, 'NONE');
  });

  it('when the mobile phone number changes on a verified account, answers 200 with mobilePhoneNumberVerified false', async () => {
    const { token, account } = await owner();
    await markPhoneVerified(account.id);
    const res = await update(token, { accountId: account.id, mobilePhoneNumber: '+905329876543' });
    assert.equal(res.status, 200);
    assert.equal(res.body.mobilePhoneNumber, '+905329876543');
    assert.equal(res.body.mobilePhoneNumberVerified, false);
    assert.equal((await accountRow(account.id)).mobile_phone_number_verified, false);
  });

  it('when other fields change, or the same number is sent again, a verified number stays verified', async () => {
    const { token, account } = await owner();
    await markPhoneVerified(account.id);
    const res = await update(token, { accountId: account.id, company: 'Difference Engines', location: 'London' });
    assert.equal(res.status, 200);
    assert.equal(res.body.company, 'Difference Engines');
    assert.equal(res.body.mobilePhoneNumberVerified, true);
    const same = await update(token, { accountId: account.id, mobilePhoneNumber: '+905321234567' });
    assert.equal(same.status, 200);
    assert.equal(same.body.mobilePhoneNumberVerified, true);
  });

  it('when only the accountId is sent, answers 200 with the account unchanged', async () => {
    const { token, account } = await owner();
    const res = await update(token, { accountId: account.id });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, account);
  });

  it('when an ADMIN changes another user\'s account, answers 200', async () => {
    const { account } = await owner();
    const res = await update(adminToken, { accountId: account.id, company: 'Changed by ADMIN' });
    assert.equal(res.status, 200);
    assert.equal(res.body.company, 'Changed by ADMIN');
  });

  it('when profilePictureUrl is not an absolute http(s) URL (javascript:, data:, file:), answers 400 and keeps the old one', async () => {
    const { token, account } = await owner({ profilePictureUrl: 'https://cdn.example.com/p.png' });
    for (const profilePictureUrl of ['javascript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'file:///etc/passwd']) {
      for (const accessToken of [token, adminToken]) {
        const res = await update(accessToken, { accountId: account.id, profilePictureUrl });
        assert.equal(res.status, 400, profilePictureUrl);
        assert.equal(res.body.message, 'body.profilePictureUrl must be an absolute http: or https: URL');
      }
    }
    assert.equal((await accountRow(account.id)).profile_picture_url, 'https://cdn.example.com/p.png');
  });

  it('when the body names subscriptionPlan, answers 400 and changes nothing', async () => {
    const { token, account } = await owner();
    for (const accessToken of [token, adminToken]) {
      const res = await update(accessToken, { accountId: account.id, subscriptionPlan: 'PREMIUM_YEARLY', company: 'Sneaky' });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'Bad Request');
      assert.ok(res.body.messages.some((m: string) => m.includes('subscriptionPlan')), JSON.stringify(res.body.messages));
    }
    const row = await accountRow(account.id);
    assert.equal(row.subscription_plan, 'NONE');
    assert.equal(row.company, 'Analytical Engines');
  });

  it('when the body has an unknown field (userId, emailVerified) or a bad value (a control or bidi character too), answers 400 and changes nothing', async () => {
    const { token, account } = await owner();
    const other = await identity.createUser();
    const bodies = [
      { accountId: account.id, userId: other.id },
      { accountId: account.id, emailVerified: true },
      { accountId: account.id, mobilePhoneNumberVerified: true },
      { accountId: account.id, type: 'PERSONAL' },
      { accountId: account.id, company: '' },
      { accountId: account.id, company: 'Evil\u001b]0;owned\u0007' },
      { accountId: account.id, location: 'Ankara\nIstanbul' },
      { accountId: account.id, industry: 'Mining\u202e' },
      { accountId: account.id, mobilePhoneNumber: '+90532\r123' },
      { accountId: 'not-a-uuid', company: 'x' },
      { company: 'no account id' },
    ];
    for (const body of bodies) assert.equal((await update(token, body)).status, 400, JSON.stringify(body));
    const row = await accountRow(account.id);
    assert.equal(row.user_id, account.userId);
    assert.equal(row.email_verified, false);
    assert.equal(row.company, 'Analytical Engines');
  });

  for (const roles of [['STANDARD_USER'], ['POWER_USER'], ['EXTENDED_USER', 'API_USER']] as Role[][]) {
    it(`when a caller with roles ${roles.join('+')} changes another user's account, answers the 404 of an unknown account (no oracle) and changes nothing`, async () => {
      const { account } = await owner();
      const intruder = await owner({ company: 'Intruder Ltd' }, roles);
      const res = await update(intruder.token, { accountId: account.id, company: 'Hijacked', mobilePhoneNumber: '+900000000000' });
      const unknown = await update(intruder.token, { accountId: randomUUID(), company: 'Hijacked' });
      assert.deepEqual([res.status, res.body.message], [404, 'Account not found']);
      assert.deepEqual([unknown.status, unknown.body.message], [404, 'Account not found']);
      const row = await accountRow(account.id);
      assert.equal(row.company, 'Analytical Engines');
      assert.equal(row.mobile_phone_number, '+905321234567');
      assert.equal(row.updated_at.toISOString(), account.updatedAt);
      assert.equal((await accountRow(intruder.account.id)).company, 'Intruder Ltd', 'nor their own');
    });
  }

  it('when no account has the accountId, answers 404 Account not found', async () => {
    const res = await update(adminToken, { accountId: UNKNOWN_ACCOUNT_ID, company: 'Nobody' });
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'Not Found');
    assert.equal(res.body.message, 'Account not found');
  });

  it('when the accountId is spelled in upper case, answers as for the canonical id; as urn:uuid:, 400 (never 500)', async () => {
    const { token, account } = await owner();
    const upper = await update(token, { accountId: account.id.toUpperCase(), company: 'Upper' });
    assert.equal(upper.status, 200);
    assert.equal(upper.body.id, account.id);
    const urn = await update(token, { accountId: `urn:uuid:${account.id}`, company: 'Urn' });
    assert.equal(urn.status, 400);
    assert.equal((await accountRow(account.id)).company, 'Upper');
    assert.equal((await update(token, { accountId: UNKNOWN_ACCOUNT_ID.toUpperCase(), company: 'x' })).status, 404);
  });

  it('when no token is sent, answers 401 Bad Credentials and changes nothing', async () => {
    const { account } = await owner();
    const res = await update(undefined, { accountId: account.id, company: 'Anonymous' });
    assert.equal(res.status, 401);
    assert.equal(res.body.message, 'Bad Credentials');
    assert.equal((await accountRow(account.id)).company, 'Analytical Engines');
  });
});
