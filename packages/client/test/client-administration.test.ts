import assert from 'node:assert/strict';
import { ApiError, type Client, allPages, createClient } from '@platform/client';
import { type FakeGateway, errorReply, startFakeGateway } from './support/fake-gateway.ts';
import { verifyRecorded } from './support/verify-signature.ts';

const key = { alg: 'hmac-sha256', secret: 'test-secret' } as const;
const tokens = { username: 'admin@example.com', type: 'Bearer', accessToken: 'access-0', refreshToken: 'refresh-0' } as const;
const USER_ID = '3f1c2a4e-8b7d-4c6e-9a1f-2b3c4d5e6f70';

// CONTRACT.md part 11 in the SDK: user search and read, the audit trail, sessions.
describe('client: users find and get, audit events, sessions', () => {
  let gw: FakeGateway;
  let client: Client;

  beforeEach(async () => {
    gw = await startFakeGateway();
    client = createClient({ env: 'local', baseUrl: gw.url, keyId: 'test-key', key, tokens: { ...tokens } });
  });
  afterEach(async () => {
    for (const req of gw.requests) verifyRecorded(req, key);
    await gw.close();
  });

  const page = (items: unknown[], nextCursor: string | null) => ({ status: 200, body: { items, nextCursor } });

  it('users.find and users.get: GET with the filters as query and the bearer token; the page as answered', async () => {
    gw.handler = (req) => (req.url.startsWith('/v1/users?') ? page([{ userId: USER_ID }], 'next-1') : { status: 200, body: { userId: USER_ID } });
    const found = await client.users.find({ status: 'BLOCKED', q: 'ayşe yılmaz', role: 'ADMIN', limit: 2 });
    assert.deepEqual(found, { items: [{ userId: USER_ID }], nextCursor: 'next-1' });
    await client.users.find();
    assert.deepEqual(await client.users.get(USER_ID), { userId: USER_ID });
    assert.deepEqual(
      gw.requests.map((r) => [r.method, r.url, r.headers.authorization]),
      [
        ['GET', '/v1/users?status=BLOCKED&q=ay%C5%9Fe+y%C4%B1lmaz&role=ADMIN&limit=2', 'Bearer access-0'],
        ['GET', '/v1/users', 'Bearer access-0'],
        ['GET', `/v1/users/${USER_ID}`, 'Bearer access-0'],
      ],
    );
  });

  it('audit.events: the filters as query, times as given', async () => {
    gw.handler = () => page([], null);
    assert.deepEqual(await client.audit.events({ subjectUserId: USER_ID, type: 'user.unblocked', since: '2025-06-01T00:00:00Z', cursor: 'abc' }), { items: [], nextCursor: null });
    assert.equal(gw.requests[0]!.url, `/v1/audit/events?subjectUserId=${USER_ID}&type=user.unblocked&since=2025-06-01T00%3A00%3A00Z&cursor=abc`);
  });

  it('sessions: list (with userId for an ADMIN), revoke one, revoke all; a 204 resolves to undefined', async () => {
    gw.handler = (req) => (req.method === 'DELETE' ? { status: 204 } : page([{ sessionId: 's-1', current: true }], null));
    assert.deepEqual((await client.sessions.list()).items, [{ sessionId: 's-1', current: true }]);
    await client.sessions.list({ userId: USER_ID });
    assert.equal(await client.sessions.revoke('5d7f3b8e-2c4a-4e8f-9b1d-0a6c3e5f7b9d'), undefined);
    assert.equal(await client.sessions.revokeAll(), undefined);
    assert.equal(await client.sessions.revokeAll({ userId: USER_ID }), undefined);
    assert.deepEqual(
      gw.requests.map((r) => [r.method, r.url, r.body.length]),
      [
        ['GET', '/v1/auth/sessions', 0],
        ['GET', `/v1/auth/sessions?userId=${USER_ID}`, 0],
        ['DELETE', '/v1/auth/sessions/5d7f3b8e-2c4a-4e8f-9b1d-0a6c3e5f7b9d', 0],
        ['DELETE', '/v1/auth/sessions', 0],
        ['DELETE', `/v1/auth/sessions?userId=${USER_ID}`, 0],
      ],
    );
  });

  it('allPages walks every page by its cursor, fetching each only when needed', async () => {
    gw.handler = (req) => {
      const cursor = new URL(req.url, 'http://x').searchParams.get('cursor');
      const users = (...ids: string[]) => ids.map((userId) => ({ userId }));
      if (cursor === null) return page(users('u1', 'u2'), 'c1');
      if (cursor === 'c1') return page(users('u3'), 'c2');
      return page(users('u4'), null);
    };
    const seen: string[] = [];
    for await (const user of allPages((cursor) => client.users.find({ status: 'BLOCKED', limit: 2, cursor }))) {
      seen.push(user.userId);
      if (user.userId === 'u1') assert.equal(gw.requests.length, 1, 'the next page is not fetched before it is needed');
    }
    assert.deepEqual(seen, ['u1', 'u2', 'u3', 'u4']);
    assert.deepEqual(gw.requests.map((r) => new URL(r.url, 'http://x').searchParams.get('cursor')), [null, 'c1', 'c2']);
  });

  it('an error answer is an ApiError with the error body (a bad cursor: 400)', async () => {
    gw.handler = (req) => errorReply(400, 'Bad Request', 'query.cursor is not a cursor of this list; start again without it', req.url);
    const err = await client.audit.events({ cursor: 'x' }).catch((e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 400);
    assert.match(err.body.message, /start again/);
  });
});
