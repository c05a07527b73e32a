import assert from 'node:assert/strict';
import request from 'supertest';
import type { Role } from '@platform/auth';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

const UNKNOWN_USER_ID = '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e';

describe('GET /v1/accounts/{userId}', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const read = (token: string | undefined, userId: string) => {
    const req = request(identity.app).get(`/v1/accounts/${userId}`);
    if (token !== undefined) req.set('Authorization', `Bearer ${token}`);
    return req;
  };

  /** A fresh user with an account made through the API, and the user's access token. */
  async function owner(roles: Role[] = ['STANDARD_USER'], company = 'Analytical Engines') {
    const user = await identity.createUser({ roles });
    const token = (await identity.login(user)).accessToken;
    const created = await request(identity.app)
      .post('/v1/accounts/create')
      .set('Authorization', `Bearer ${token}`)
      .send({ userId: user.id, type: 'ORGANIZATION', subscriptionPlan: 'TRIAL', company, location: 'İzmir' });
    assert.equal(created.status, 201);
    return { user, token, account: created.body as Record<string, unknown> & { id: string } };
  }

  it('when the owner reads it, answers 200 with the account as created', async () => {
    const { user, token, account } = await owner();
    const res = await read(token, user.id);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, account);
    assert.equal(res.body.userId, user.id);
    assert.equal(res.body.subscriptionPlan, 'TRIAL');
    assert.equal(res.body.company, 'Analytical Engines');
  });

  it('when an ADMIN reads another user\'s account, answers 200 with it', async () => {
    const { user, account } = await owner();
    const res = await read(adminToken, user.id);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, account);
  });

  it('after an update, answers the updated account', async () => {
    const { user, token, account } = await owner();
    const updated = await request(identity.app)
      .patch('/v1/accounts/update')
      .set('Authorization', `Bearer ${token}`)
      .send({ accountId: account.id, company: 'Difference Engines' });
    assert.equal(updated.status, 200);
    const res = await read(token, user.id);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, updated.body);
    assert.equal(res.body.company, 'Difference Engines');
  });

  for (const roles of [['GUEST'], ['STANDARD_USER'], ['POWER_USER'], ['EXTENDED_USER', 'API_USER']] as Role[][]) {
    it(`when a caller with roles ${roles.join('+')} reads another user's account, answers 403 Forbidden without its data`, async () => {
      const { user } = await owner(['STANDARD_USER'], 'Secret Company');
      const other = await owner(roles, 'Other Company');
      const res = await read(other.token, user.id);
      assert.equal(res.status, 403);
      assert.equal(res.body.error, 'Forbidden');
      assert.equal(res.body.path, `/v1/accounts/${user.id}`);
      assert.ok(!JSON.stringify(res.body).includes('Secret Company'));
    });
  }

  it('when the user has no account, answers 404 Account not found, to the user and to an ADMIN', async () => {
    const user = await identity.createUser();
    const token = (await identity.login(user)).accessToken;
    for (const accessToken of [token, adminToken]) {
      const res = await read(accessToken, user.id);
      assert.equal(res.status, 404);
      assert.equal(res.body.error, 'Not Found');
      assert.equal(res.body.message, 'Account not found');
    }
  });

  it('when an ADMIN names an unknown user, answers 404; a non-ADMIN gets 403 for it', async () => {
    assert.equal((await read(adminToken, UNKNOWN_USER_ID)).status, 404);
    const { token } = await owner(['POWER_USER']);
    assert.equal((await read(token, UNKNOWN_USER_ID)).status, 403);
  });

  it('when the userId is spelled in upper case, answers as for the canonical id (never 403 to the owner); as urn:uuid:, 400 (never 500)', async () => {
    const { user, token, account } = await owner();
    for (const spelling of [user.id.toUpperCase()]) {
      for (const accessToken of [token, adminToken]) {
        const res = await read(accessToken, spelling);
        assert.equal(res.status, 200, spelling);
        assert.deepEqual(res.body, account);
      }
    }
    assert.equal((await read(adminToken, `urn:uuid:${user.id}`)).status, 400);
    assert.equal((await read(adminToken, UNKNOWN_USER_ID.toUpperCase())).status, 404);
  });

  it('when the userId is not a uuid, answers 400', async () => {
    const res = await read(adminToken, 'not-a-uuid');
    assert.equal(res.status, 400);
    assert.equal(res.body.error, 'Bad Request');
  });

  it('when no token or a forged token is sent, answers 401 Bad Credentials', async () => {
    const { user } = await owner();
    for (const token of [undefined, 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.']) {
      const res = await read(token, user.id);
      assert.equal(res.status, 401);
      assert.equal(res.body.message, 'Bad Credentials');
    }
  });

  it('BOLA: user A cannot read or update user B\'s account by swapping in B\'s ids, but still works on their own', async () => {
    const a = await owner(['STANDARD_USER'], 'A Company');
    const b = await owner(['STANDARD_USER'], 'B Company');

    assert.equal((await read(a.token, b.user.id)).status, 403);
    const patch = (token: string, body: Record<string, unknown>) =>
      request(identity.app).patch('/v1/accounts/update').set('Authorization', `Bearer ${token}`).send(body);
    // Addressed by the account's own id, B's account answers A as an unknown one does (no oracle of ids).
    assert.equal((await patch(a.token, { accountId: b.account.id, company: 'Owned by A' })).status, 404);
    const create = await request(identity.app)
      .post('/v1/accounts/create')
      .set('Authorization', `Bearer ${a.token}`)
      .send({ userId: b.user.id, type: 'INDIVIDUAL' });
    assert.equal(create.status, 403);

    const bAccount = await read(b.token, b.user.id);
    assert.deepEqual(bAccount.body, b.account, "B's account is untouched");
    const own = await patch(a.token, { accountId: a.account.id, company: 'A Company 2' });
    assert.equal(own.status, 200);
    assert.equal(own.body.userId, a.user.id);
    assert.equal((await read(a.token, a.user.id)).body.company, 'A Company 2');
  });
});
