import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ALL_BUCKETS, ledgerKey, revocationBucket, sessionKey } from '@platform/auth/testing';
import request from 'supertest';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

/**
 * CONTRACT.md part 13 at identity: revocations are recorded in Postgres; when Redis loses its data, every
 * bearer request fails closed (503) until the keeper has re-seeded what may still be live, then live
 * tokens work again and revoked ones stay refused. A revocation that could not reach Redis is re-seeded too.
 */
describe('the revocation mirror (Redis lost its data)', function () {
  this.timeout(30_000);
  let identity: IdentityHarness;

  before(async () => {
    // A slow keeper, so a test sees the window between the loss and the re-seed.
    identity = await startIdentity({ REVOCATION_MIRROR_CHECK_MS: '4000' });
  });
  after(async () => {
    await identity.close();
  });

  const sessionOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sid: string }).sid;
  /** Whether every bucket's mirror is whole (ready = 1). */
  const everyBucketWhole = async () => (await Promise.all(ALL_BUCKETS.map((b) => identity.redis.hget(ledgerKey(b), 'ready')))).every((ready) => ready === '1');

  const account = (user: { id: string }, token: string) => request(identity.app).get(`/v1/accounts/${user.id}`).set('Authorization', `Bearer ${token}`);

  async function untilStatus(user: { id: string }, token: string, wanted: number, withinMs: number): Promise<number> {
    const deadline = Date.now() + withinMs;
    let status = 0;
    while (Date.now() < deadline) {
      status = (await account(user, token)).status;
      if (status === wanted) return status;
      await sleep(100);
    }
    return status;
  }

  it('when Redis lost its data, answers 503 to every token until re-seeded, then the live token 404 (no account) and the logged-out one 401', async () => {
    const live = await identity.createUser();
    const gone = await identity.createUser();
    const liveToken = (await identity.login(live)).accessToken;
    const goneToken = (await identity.login(gone)).accessToken;
    assert.equal((await request(identity.app).post('/v1/auth/logout').send({ jwtToken: goneToken })).status, 200);
    assert.equal((await account(gone, goneToken)).status, 401);

    await identity.loseRedisData();
    const during = await account(live, liveToken);
    assert.equal(during.status, 503, JSON.stringify(during.body));
    assert.equal(during.body.message, 'Token revocations are being restored after a data loss; try again shortly');
    assert.equal(during.headers['retry-after'], '1', 'a retry cures it: the answer says when (CONTRACT.md part 13)');
    assert.equal((await account(gone, goneToken)).status, 503, 'a logged-out token is never let through');
    assert.equal(await identity.redis.hget(ledgerKey(revocationBucket(sessionOf(liveToken))), 'ready'), '0');

    await identity.revocations.checkNow();
    assert.equal(await untilStatus(live, liveToken, 404, 5000), 404, 'the live token works again (the user has no account)');
    assert.equal((await account(gone, goneToken)).status, 401, 'the logged-out token stays refused');
    // Ready as soon as every bucket is re-seeded: the gateway dates its nonces' loss on slots of its own.
    assert.ok(await everyBucketWhole());
    assert.equal((await request(identity.app).get('/health/ready')).status, 200);
  });

  it('when the keeper runs on its own, recovery takes at most one check interval (4 s here)', async () => {
    const user = await identity.createUser();
    const token = (await identity.login(user)).accessToken;
    await identity.loseRedisData();
    const lost = Date.now();
    assert.equal(await untilStatus(user, token, 404, 6000), 404);
    assert.ok(Date.now() - lost < 5000, `recovered after ${Date.now() - lost} ms`);
  });

  it('when a revocation could not reach Redis, it is written again from Postgres once Redis answers, so the revoked token is refused', async () => {
    const user = await identity.createUser();
    const token = (await identity.login(user)).accessToken;
    identity.revocations.missed();
    await identity.revocations.checkNow();
    assert.equal((await account(user, token)).status, 404, 'a re-seed leaves live tokens working');
    // A session ended in Postgres whose revocation never reached Redis (as when Redis was down).
    await identity.db('sessions').where({ user_id: user.id }).update({ revoked_at: identity.db.fn.now(), revoked_reason: 'revoked' });
    assert.equal((await account(user, token)).status, 404, 'not yet known to Redis');
    identity.revocations.missed();
    await identity.revocations.checkNow();
    assert.equal((await account(user, token)).status, 401);
    assert.ok(await everyBucketWhole());
  });

  it('when the publish of an ended session meets a connection blip, tries again within the request: the answer comes once its tokens are refused', async () => {
    const user = await identity.createUser();
    const token = (await identity.login(user)).accessToken;
    const sid = sessionOf(token);
    const { revocations } = identity;
    const endSessions = revocations.endSessions.bind(revocations);
    let attempts = 0;
    // The first two attempts meet the connection as a drop leaves it; Redis itself is the test's, whole.
    revocations.endSessions = async (...args) => {
      attempts += 1;
      if (attempts <= 2) throw new Error('Connection is closed.');
      return await endSessions(...args);
    };
    try {
      assert.equal((await request(identity.app).post('/v1/auth/logout').send({ jwtToken: token })).status, 200);
    } finally {
      revocations.endSessions = endSessions;
    }
    assert.equal(attempts, 3);
    assert.equal(await identity.redis.exists(sessionKey(sid)), 1, 'answered before the session reached the blacklist');
    assert.equal((await account(user, token)).status, 401);
    assert.ok(!identity.log.lines().some((line) => String(line.msg).startsWith('could not publish ended sessions')), 'handed back as missed');
  });

  it('when Redis went back in time (a replica that lagged promoted: the mirror intact, a revocation gone), marks the loss and re-seeds it', async () => {
    const user = await identity.createUser();
    const token = (await identity.login(user)).accessToken;
    const sid = sessionOf(token);
    const mirror = ledgerKey(revocationBucket(sid));
    const rollBack = await identity.snapshotRedisData();
    const bornBefore = Number(await identity.redis.hget(mirror, 'born'));
    assert.equal((await request(identity.app).post('/v1/auth/logout').send({ jwtToken: token })).status, 200);
    assert.equal(await identity.redis.exists(sessionKey(sid)), 1);

    await rollBack();
    assert.equal(await identity.redis.exists(sessionKey(sid)), 0, 'the rollback kept the revocation');
    assert.equal(await identity.redis.hget(mirror, 'ready'), '1', 'the rollback lost the mirror itself');
    const found = Date.now();
    await identity.revocations.checkNow();
    // The keeper found its write stamp behind what it wrote: the loss is marked (born now) and re-seeded.
    assert.equal(await identity.redis.exists(sessionKey(sid)), 1, 'the lost revocation was not re-seeded');
    const born = Number(await identity.redis.hget(mirror, 'born'));
    assert.ok(born > bornBefore && born >= found - 50, `born ${born}, was ${bornBefore}, found at ${found}`);
    assert.equal(await identity.redis.hget(mirror, 'ready'), '1');
    assert.ok(identity.log.lines().some((line) => line.msg === 'revocation mirror re-seeded; bearer requests accepted again' && String(line.cause).includes('fewer revocations')));
    // Found once: the next check leaves the mirror alone.
    await identity.revocations.checkNow();
    assert.equal(Number(await identity.redis.hget(mirror, 'born')), born);
  });

  it('when the keeper reaches a flushed bucket before any request does, says Redis lost its data, not that a replica went back', async () => {
    const user = await identity.createUser();
    const token = (await identity.login(user)).accessToken;
    const sid = sessionOf(token);
    // The keeper's write stamp of this session's bucket now counts a revocation: the flush takes it too.
    assert.equal((await request(identity.app).post('/v1/auth/logout').send({ jwtToken: token })).status, 200);
    await identity.loseRedisData();
    assert.equal(await identity.redis.exists(ledgerKey(revocationBucket(sid))), 0, 'no request recreated the mirror');
    const before = identity.log.lines().length;
    await identity.revocations.checkNow();
    assert.equal(await identity.redis.exists(sessionKey(sid)), 1, 'the revocation was not re-seeded');
    assert.ok(await everyBucketWhole());
    const reseeded = identity.log.lines().slice(before).filter((line) => line.msg === 'revocation mirror re-seeded; bearer requests accepted again');
    assert.deepEqual(reseeded.map((line) => line.cause), ['Redis lost its data']);
  });

  it('when more sessions than a re-seed page ended in one statement (one instant), re-seeds every one of them once and opens the mirror', async () => {
    const user = await identity.createUser();
    // 1,005 sessions ended by one statement share one now(): more than a page (1,000) within one millisecond.
    const ended = (await identity.db.raw(
      `INSERT INTO sessions (user_id, revoked_at, revoked_reason)
       SELECT ?, now(), 'revoked' FROM generate_series(1, 1005) RETURNING id`,
      [user.id],
    )) as { rows: Array<{ id: string }> };
    await identity.loseRedisData();
    const started = Date.now();
    await identity.revocations.checkNow();
    assert.ok(Date.now() - started < 5000, `the re-seed took ${Date.now() - started} ms`);
    assert.ok(await everyBucketWhole(), 'a mirror stayed closed');
    const missing = [];
    for (const { id } of ended.rows) if ((await identity.redis.exists(sessionKey(id))) === 0) missing.push(id);
    assert.deepEqual(missing, [], 'sessions left out of the re-seed');
  });
});
