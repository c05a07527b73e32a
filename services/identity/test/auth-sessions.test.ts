import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Role } from '@platform/auth';
import request from 'supertest';
import { type IdentityHarness, type TestUser, startIdentity } from './support/identity-harness.ts';
import { everyPage } from './support/pages.ts';

const NON_ADMIN_ROLES: readonly Role[] = ['GUEST', 'API_USER', 'STANDARD_USER', 'POWER_USER', 'EXTENDED_USER'];
const sidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sid as string;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Session {
  sessionId: string;
  createdAt: string;
  lastUsedAt: string;
  expiresAt: string;
  clientKeyId: string | null;
  sourceAddress: string | null;
  current: boolean;
}

describe('sessions: GET /v1/auth/sessions, DELETE /v1/auth/sessions, DELETE /v1/auth/sessions/{sessionId}', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity({ REFRESH_TOKEN_TTL_S: '3600', SESSION_MAX_LIFETIME_S: '7200' });
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const list = (token: string, query = '') => request(identity.app).get(`/v1/auth/sessions${query}`).set('Authorization', `Bearer ${token}`);
  const revokeOne = (token: string, sessionId: string) => request(identity.app).delete(`/v1/auth/sessions/${sessionId}`).set('Authorization', `Bearer ${token}`);
  const revokeAll = (token: string, query = '') => request(identity.app).delete(`/v1/auth/sessions${query}`).set('Authorization', `Bearer ${token}`);
  /** Whether a token is still accepted: reading one's own account answers 404 (none made), not 401. */
  const accepted = async (token: string, userId: string) =>
    (await request(identity.app).get(`/v1/accounts/${userId}`).set('Authorization', `Bearer ${token}`)).status !== 401;

  async function userWithSessions(count: number, roles: Role[] = ['STANDARD_USER']): Promise<{ user: TestUser; tokens: Array<{ accessToken: string; refreshToken: string }> }> {
    const user = await identity.createUser({ roles });
    const tokens = [];
    for (let i = 0; i < count; i += 1) tokens.push(await identity.login(user));
    return { user, tokens };
  }

  describe('GET /v1/auth/sessions', () => {
    it('lists the caller\'s live sessions newest first: when opened, last used, when it ends, from where, which is current', async () => {
      const before = Date.now();
      const { tokens } = await userWithSessions(3);
      const res = await list(tokens[1]!.accessToken);
      assert.equal(res.status, 200);
      const items = res.body.items as Session[];
      assert.equal(res.body.nextCursor, null);
      assert.deepEqual(
        items.map((s) => [s.sessionId, s.current]),
        [
          [sidOf(tokens[2]!.accessToken), false],
          [sidOf(tokens[1]!.accessToken), true],
          [sidOf(tokens[0]!.accessToken), false],
        ],
      );
      for (const session of items) {
        assert.equal(session.lastUsedAt, session.createdAt, 'never refreshed: last used at its login');
        assert.ok(Date.parse(session.createdAt) >= before - 1000);
        // The refresh token (1 h) expires before the session's absolute lifetime (2 h).
        assert.ok(Math.abs(Date.parse(session.expiresAt) - (Date.parse(session.createdAt) + 3_600_000)) < 2000, session.expiresAt);
        // Straight to identity in this test: no client key, the socket's address.
        assert.deepEqual([session.clientKeyId, session.sourceAddress], [null, '127.0.0.1']);
      }
    });

    it('a refresh moves lastUsedAt, and expiresAt with the new refresh token, but never past the absolute lifetime', async () => {
      const { user, tokens } = await userWithSessions(1);
      // Logged in 90 minutes ago: the refresh token's hour would go past the session's two hours.
      await identity.db('sessions').where({ id: sidOf(tokens[0]!.accessToken) }).update({ created_at: identity.db.raw("now() - interval '90 minutes'") });
      await sleep(20);
      const refreshed = await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: tokens[0]!.refreshToken });
      assert.equal(refreshed.status, 200);
      const [session] = (await list(refreshed.body.accessToken)).body.items as Session[];
      assert.ok(Date.parse(session!.lastUsedAt) - Date.parse(session!.createdAt) >= 90 * 60_000, JSON.stringify(session));
      assert.ok(Date.now() - Date.parse(session!.lastUsedAt) < 5000);
      assert.equal(Date.parse(session!.expiresAt), Date.parse(session!.createdAt) + 7_200_000);
      assert.ok(await accepted(refreshed.body.accessToken, user.id));
    });

    it('leaves out ended and expired sessions', async () => {
      const { tokens } = await userWithSessions(4);
      const [loggedOut, expired, outlived, live] = tokens.map((t) => sidOf(t.accessToken));
      assert.equal((await request(identity.app).post('/v1/auth/logout').send({ jwtToken: tokens[0]!.accessToken })).status, 200);
      await identity.db('refresh_tokens').where({ session_id: expired }).update({ expires_at: identity.db.raw("now() - interval '1 second'"), created_at: identity.db.raw("now() - interval '2 hours'") });
      await identity.db('sessions').where({ id: outlived }).update({ created_at: identity.db.raw("now() - interval '3 hours'") });
      const ids = ((await list(tokens[3]!.accessToken)).body.items as Session[]).map((s) => s.sessionId);
      assert.deepEqual(ids, [live]);
      assert.ok(![loggedOut, expired, outlived].some((sid) => ids.includes(sid!)));
    });

    it('pages with limit and cursor; logins racing a listing never make it show a session twice or skip one that was there', async () => {
      const { user, tokens } = await userWithSessions(9);
      const token = tokens[0]!.accessToken;
      const there = tokens.map((t) => sidOf(t.accessToken));
      const seen: string[] = [];
      await Promise.all([
        everyPage<Session>(async (query) => {
          const res = await list(token, query);
          assert.ok(res.body.items.length <= 2);
          return res;
        }, '?limit=2').then((sessions) => seen.push(...sessions.map((s) => s.sessionId))),
        Promise.all(Array.from({ length: 6 }, () => identity.login(user))),
      ]);
      assert.equal(new Set(seen).size, seen.length, `a session was shown twice: ${seen.join(' ')}`);
      for (const sid of there) assert.ok(seen.includes(sid), `session ${sid} was skipped`);
    });

    it('sessions ended before the cursor while a listing runs make it skip none of the others', async () => {
      const { tokens } = await userWithSessions(9);
      // The oldest session lists and ends the others: it is shown last, so it stays live throughout.
      const token = tokens[0]!.accessToken;
      const newestFirst = tokens.map((t) => sidOf(t.accessToken)).reverse();
      const pages: string[][] = [];
      let cursor: string | null = null;
      const nextPage = async () => {
        const res = await list(token, `?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        pages.push((res.body.items as Session[]).map((s) => s.sessionId));
        cursor = res.body.nextCursor;
      };
      await nextPage();
      await nextPage();
      // Three of the four shown end: an offset of 4 into the six left would skip three never shown.
      for (const sid of newestFirst.slice(0, 3)) assert.equal((await revokeOne(token, sid)).status, 204);
      do await nextPage();
      while (cursor !== null);
      assert.deepEqual(pages.flat(), newestFirst);
    });

    it('an ADMIN lists anyone\'s with ?userId= (none of them current); an unknown user is 404', async () => {
      const { user, tokens } = await userWithSessions(2);
      const res = await list(adminToken, `?userId=${user.id.toUpperCase()}`);
      assert.equal(res.status, 200);
      assert.deepEqual(
        (res.body.items as Session[]).map((s) => [s.sessionId, s.current]),
        [
          [sidOf(tokens[1]!.accessToken), false],
          [sidOf(tokens[0]!.accessToken), false],
        ],
      );
      const unknown = await list(adminToken, `?userId=${randomUUID()}`);
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.message, 'User not found');
    });

    it('any other role naming another user (existing or not) gets 403; naming itself is its own list; without a token 401', async () => {
      const { user: victim } = await userWithSessions(1);
      for (const role of NON_ADMIN_ROLES) {
        const { user, tokens } = await userWithSessions(1, [role]);
        for (const userId of [victim.id, randomUUID()]) {
          const res = await list(tokens[0]!.accessToken, `?userId=${userId}`);
          assert.equal(res.status, 403, `${role}: ${JSON.stringify(res.body)}`);
        }
        const own = await list(tokens[0]!.accessToken, `?userId=${user.id}`);
        assert.deepEqual([own.status, own.body.items.length], [200, 1]);
      }
      assert.equal((await request(identity.app).get('/v1/auth/sessions')).status, 401);
    });

    it('refuses bad query parameters with 400: limits out of range, a cursor it did not issue, unknown or repeated parameters', async () => {
      const { user, tokens } = await userWithSessions(1);
      for (const query of ['?limit=0', '?limit=201', '?limit=2.5', '?limit=-1', '?cursor=bm90LWEtY3Vyc29y', `?cursor=${'A'.repeat(600)}`, '?userId=me', '?sort=asc', `?userId=${user.id}&userId=${user.id}`]) {
        const res = await list(tokens[0]!.accessToken, query);
        assert.equal(res.status, 400, `${query}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.path, `/v1/auth/sessions${query}`);
      }
    });
  });

  describe('DELETE /v1/auth/sessions/{sessionId}', () => {
    it('the owner ends another of its sessions (a stolen one): 204, its tokens are refused at once, the others keep working', async () => {
      const { user, tokens } = await userWithSessions(2);
      const [stolen, mine] = tokens;
      const res = await revokeOne(mine!.accessToken, sidOf(stolen!.accessToken));
      assert.equal(res.status, 204);
      assert.equal(res.text, '');
      assert.equal(await accepted(stolen!.accessToken, user.id), false);
      assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: stolen!.refreshToken })).status, 401);
      assert.equal(await accepted(mine!.accessToken, user.id), true);
      assert.deepEqual(((await list(mine!.accessToken)).body.items as Session[]).map((s) => s.sessionId), [sidOf(mine!.accessToken)]);
      const [event] = (await identity.db('audit_events').where({ subject_user_id: user.id, type: 'session.revoked' }).select('actor_user_id', 'details')) as Array<{ actor_user_id: string; details: unknown }>;
      assert.deepEqual(event, { actor_user_id: user.id, details: { sessionIds: [sidOf(stolen!.accessToken)], reason: 'revoked' } });
    });

    it('twice, or an unknown session: 404 Session not found', async () => {
      const { tokens } = await userWithSessions(2);
      const sid = sidOf(tokens[0]!.accessToken);
      assert.equal((await revokeOne(tokens[1]!.accessToken, sid)).status, 204);
      const again = await revokeOne(tokens[1]!.accessToken, sid);
      assert.deepEqual([again.status, again.body.message], [404, 'Session not found']);
      assert.equal((await revokeOne(tokens[1]!.accessToken, randomUUID())).status, 404);
    });

    it('two owners racing to end the same session: one 204, one 404', async () => {
      const { tokens } = await userWithSessions(3);
      const sid = sidOf(tokens[0]!.accessToken);
      const statuses = (await Promise.all([revokeOne(tokens[1]!.accessToken, sid), revokeOne(tokens[2]!.accessToken, sid)])).map((r) => r.status).sort();
      assert.deepEqual(statuses, [204, 404]);
    });

    it('an ADMIN ends anyone\'s; any other role gets the 404 of an unknown session (no oracle) and the session lives on; without a token 401', async () => {
      const { user, tokens } = await userWithSessions(1);
      const sid = sidOf(tokens[0]!.accessToken);
      for (const role of NON_ADMIN_ROLES) {
        const caller = await identity.tokenFor([role]);
        const [others, unknown] = await Promise.all([revokeOne(caller, sid), revokeOne(caller, randomUUID())]);
        assert.deepEqual([others.status, others.body], [unknown.status, { ...unknown.body, path: others.body.path, timestamp: others.body.timestamp }], role);
        assert.deepEqual([others.status, others.body.message], [404, 'Session not found'], role);
      }
      assert.equal((await request(identity.app).delete(`/v1/auth/sessions/${sid}`)).status, 401);
      assert.equal(await accepted(tokens[0]!.accessToken, user.id), true);
      assert.equal((await revokeOne(adminToken, sid.toUpperCase())).status, 204);
      assert.equal(await accepted(tokens[0]!.accessToken, user.id), false);
    });

    it('a session id that is not a uuid is 400; GET on the path is 405 with Allow: DELETE', async () => {
      const { tokens } = await userWithSessions(1);
      assert.equal((await revokeOne(tokens[0]!.accessToken, 'current')).status, 400);
      const get = await request(identity.app).get(`/v1/auth/sessions/${sidOf(tokens[0]!.accessToken)}`).set('Authorization', `Bearer ${tokens[0]!.accessToken}`);
      assert.deepEqual([get.status, get.headers.allow], [405, 'DELETE']);
    });
  });

  describe('DELETE /v1/auth/sessions', () => {
    it('ends every session of the caller, this one included: 204, and all its tokens are refused', async () => {
      const { user, tokens } = await userWithSessions(3);
      const res = await revokeAll(tokens[0]!.accessToken);
      assert.equal(res.status, 204);
      for (const t of tokens) assert.equal(await accepted(t.accessToken, user.id), false);
      assert.deepEqual(((await list(adminToken, `?userId=${user.id}`)).body.items as Session[]), []);
      const again = await revokeAll((await identity.login(user)).accessToken);
      assert.equal(again.status, 204, 'and again, from a new login');
    });

    it('an ADMIN ends every session of ?userId= (404 for an unknown user); any other role naming another user gets 403', async () => {
      const { user, tokens } = await userWithSessions(2);
      for (const role of NON_ADMIN_ROLES) assert.equal((await revokeAll(await identity.tokenFor([role]), `?userId=${user.id}`)).status, 403, role);
      assert.equal(await accepted(tokens[0]!.accessToken, user.id), true);
      assert.equal((await revokeAll(adminToken, `?userId=${randomUUID()}`)).status, 404);
      assert.equal((await revokeAll(adminToken, `?userId=${user.id}`)).status, 204);
      for (const t of tokens) assert.equal(await accepted(t.accessToken, user.id), false);
      assert.equal(await accepted(adminToken, user.id), true, 'the ADMIN\'s own session lives on');
      assert.equal((await request(identity.app).delete('/v1/auth/sessions')).status, 401);
    });

    it('refuses a limit or cursor (they belong to the list), unknown parameters and wrong methods', async () => {
      const { tokens } = await userWithSessions(1);
      for (const query of ['?limit=5', '?cursor=abc', '?everything=true']) assert.equal((await revokeAll(tokens[0]!.accessToken, query)).status, 400, query);
      for (const method of ['post', 'put', 'patch'] as const) {
        const res = await request(identity.app)[method]('/v1/auth/sessions').set('Authorization', `Bearer ${tokens[0]!.accessToken}`).send({});
        assert.deepEqual([res.status, res.headers.allow?.split(', ').sort()], [405, ['DELETE', 'GET']], method);
      }
      assert.equal(await accepted(tokens[0]!.accessToken, (await identity.db('sessions').where({ id: sidOf(tokens[0]!.accessToken) }).first('user_id')).user_id), true);
    });
  });
});
