import assert from 'node:assert/strict';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { refreshTokenHash } from '../src/sessions/refresh-token.ts';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

describe('POST /v1/auth/refresh', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity();
  });
  after(async () => {
    await identity.close();
  });

  const refresh = (refreshToken: string) => request(identity.app).post('/v1/auth/refresh').send({ refreshToken });

  it('when the refresh token is live, answers 200 with a new access token and a rotated refresh token in the same session', async () => {
    const user = await identity.createUser();
    const first = await identity.login(user);
    const res = await refresh(first.refreshToken);
    assert.equal(res.status, 200);
    assert.equal(res.body.type, 'Bearer');
    assert.equal(res.body.username, user.username);
    assert.notEqual(res.body.refreshToken, first.refreshToken);
    assert.notEqual(res.body.accessToken, first.accessToken);
    const before = jwt.decode(first.accessToken) as jwt.JwtPayload;
    const after = jwt.decode(res.body.accessToken) as jwt.JwtPayload;
    assert.equal(after.sid, before.sid);
    assert.notEqual(after.jti, before.jti);

    const stored = await identity.db('refresh_tokens').where({ token_hash: refreshTokenHash(res.body.refreshToken) }).first();
    const parent = await identity.db('refresh_tokens').where({ token_hash: refreshTokenHash(first.refreshToken) }).first();
    assert.equal(stored.parent_id, parent.id);
    assert.ok(parent.used_at instanceof Date);
    const raw = await identity.db('refresh_tokens').whereRaw('encode(token_hash, ?) = ?', ['escape', res.body.refreshToken]).first();
    assert.equal(raw, undefined, 'only the hash is stored');
  });

  it('records each access token issued with its session and exp, and each issue deletes a few records no verifier could accept any more', async () => {
    const user = await identity.createUser();
    const first = await identity.login(user);
    const claims = (token: string) => jwt.decode(token) as jwt.JwtPayload;
    const recorded = async (token: string) => identity.db('access_tokens').where({ token_id: claims(token).jti }).first();
    const login = await recorded(first.accessToken);
    assert.equal(login?.session_id, claims(first.accessToken).sid);
    assert.equal(login?.expires_at.getTime(), (claims(first.accessToken).exp ?? 0) * 1000);
    // Twenty records of tokens two hours past their exp, and one still live.
    const old = new Date(Date.now() - 2 * 3600 * 1000);
    await identity.db('access_tokens').insert(Array.from({ length: 20 }, (_, i) => ({ token_id: `expired-${user.id}-${i}`, session_id: claims(first.accessToken).sid, expires_at: old })));
    const expired = async () => Number((await identity.db('access_tokens').where('expires_at', '<', new Date(Date.now() - 3600 * 1000)).count({ n: '*' }))[0]?.n);
    let pair = first;
    const counts: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const res = await refresh(pair.refreshToken);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      pair = res.body;
      assert.ok(await recorded(pair.accessToken), 'the refreshed token is not recorded');
      counts.push(await expired());
    }
    assert.deepEqual(counts, [12, 4, 0]);
    assert.ok(await recorded(first.accessToken), 'a live record was deleted');
  });

  it('when a rotated refresh token is presented again, answers 401 and ends the whole session', async () => {
    const user = await identity.createUser();
    const first = await identity.login(user);
    const second = (await refresh(first.refreshToken)).body as { refreshToken: string };
    const third = (await refresh(second.refreshToken)).body as { refreshToken: string };

    const replay = await refresh(first.refreshToken);
    assert.equal(replay.status, 401);
    assert.equal(replay.body.message, 'Bad Credentials');
    assert.equal((await refresh(third.refreshToken)).status, 401, 'the newest token of the session died too');

    const sid = (jwt.decode(first.accessToken) as jwt.JwtPayload).sid as string;
    const session = await identity.db('sessions').where({ id: sid }).first();
    assert.equal(session.revoked_reason, 'refresh-token-reuse');
    const other = await identity.login(user);
    assert.equal((await refresh(other.refreshToken)).status, 200, 'other sessions of the user live on');
  });

  it('when 5 refreshes race with one token, exactly one succeeds', async () => {
    const user = await identity.createUser();
    const { refreshToken } = await identity.login(user);
    const answers = await Promise.all(Array.from({ length: 5 }, () => refresh(refreshToken)));
    assert.equal(answers.filter((res) => res.status === 200).length, 1, answers.map((res) => res.status).join(','));
    assert.equal(answers.filter((res) => res.status === 401).length, 4);
  });

  it('when the refresh token is unknown or expired, answers 401 Bad Credentials', async () => {
    assert.equal((await refresh('A'.repeat(43))).status, 401);
    const user = await identity.createUser();
    const { refreshToken } = await identity.login(user);
    await identity.db('refresh_tokens')
      .where({ token_hash: refreshTokenHash(refreshToken) })
      .update({ created_at: identity.db.raw("now() - interval '31 days'"), expires_at: identity.db.raw("now() - interval '1 second'") });
    const res = await refresh(refreshToken);
    assert.equal(res.status, 401);
    assert.equal(res.body.message, 'Bad Credentials');
  });

  it('when the user was blocked since the login, answers 401', async () => {
    const user = await identity.createUser();
    const { refreshToken } = await identity.login(user);
    await identity.db('users').where({ id: user.id }).update({ status: 'BLOCKED' });
    assert.equal((await refresh(refreshToken)).status, 401);
    await identity.db('users').where({ id: user.id }).update({ status: 'ACTIVE' });
    assert.equal((await refresh(refreshToken)).status, 401, 'the session stays ended after an unblock');
  });

  it('when the session is older than SESSION_MAX_LIFETIME_S (90 days), answers 401 however fresh the refresh token, and ends the session', async () => {
    const user = await identity.createUser();
    const session = await identity.login(user);
    // A session that was refreshed every day: its current refresh token is a day old, the login 90 days and a minute.
    const rotated = await refresh(session.refreshToken);
    assert.equal(rotated.status, 200);
    const sid = (jwt.decode(session.accessToken) as jwt.JwtPayload).sid as string;
    await identity.db('sessions').where({ id: sid }).update({ created_at: identity.db.raw("now() - interval '90 days 1 minute'") });
    const res = await refresh(rotated.body.refreshToken);
    assert.equal(res.status, 401);
    assert.equal(res.body.message, 'Bad Credentials');
    const row = await identity.db('sessions').where({ id: sid }).first('revoked_reason');
    assert.equal(row.revoked_reason, 'max-lifetime');
    const stillAccess = await request(identity.app).get(`/v1/accounts/${user.id}`).set('Authorization', `Bearer ${rotated.body.accessToken}`);
    assert.equal(stillAccess.status, 401, 'its access tokens end with it');
  });

  it('when the session is just younger than SESSION_MAX_LIFETIME_S, the refresh still answers 200', async () => {
    const user = await identity.createUser();
    const session = await identity.login(user);
    const sid = (jwt.decode(session.accessToken) as jwt.JwtPayload).sid as string;
    await identity.db('sessions').where({ id: sid }).update({ created_at: identity.db.raw("now() - interval '89 days 23 hours'") });
    assert.equal((await refresh(session.refreshToken)).status, 200);
  });
});
