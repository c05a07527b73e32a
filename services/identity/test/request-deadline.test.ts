import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { findUserById } from '../src/user-records/users.repository.ts';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

/**
 * Identity's deadline (REQUEST_DEADLINE_MS): its 503 means nothing was changed, so that a retry (the gateway
 * frees the idempotency key of a 5xx, CONTRACT.md part 3) applies a change once. An outside attack saw an
 * ADMIN's block of another ADMIN wait on locks past the deadline, answered 503, commit 1.1 s later.
 */
describe('identity\'s request deadline', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity({ REQUEST_DEADLINE_MS: '700' });
  });
  after(async () => {
    await identity.close();
  });

  it('when an ADMIN\'s block of a user waits on the user\'s row past the deadline, answers 503 and the user stays ACTIVE once the row is free', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const token = (await identity.login(admin)).accessToken;
    const user = await identity.createUser();
    const session = await identity.login(user);
    const holder = await identity.db.transaction();
    let answer: request.Response;
    try {
      // A change of the user in flight (a login's failure count, another ADMIN's update) holds its row.
      await holder('users').where({ id: user.id }).forUpdate();
      answer = await request(identity.app).patch('/v1/users/update').set('Authorization', `Bearer ${token}`).send({ userId: user.id, status: 'BLOCKED' });
    } finally {
      await holder.commit();
    }
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.equal(answer.headers['retry-after'], '1');
    await sleep(500);
    assert.equal((await findUserById(identity.db, user.id))?.status, 'ACTIVE', 'the block committed after its 503');
    assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: session.refreshToken })).status, 200, 'the user\'s sessions were ended');
    // The retry the 503 invites applies the change, once.
    const retried = await request(identity.app).patch('/v1/users/update').set('Authorization', `Bearer ${token}`).send({ userId: user.id, status: 'BLOCKED' });
    assert.equal(retried.status, 200);
    assert.equal((await findUserById(identity.db, user.id))?.status, 'BLOCKED');
  });
});
