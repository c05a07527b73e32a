import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Role } from '@platform/auth';
import request from 'supertest';
import { encodeCursor } from '../src/pagination/cursor.ts';
import { type IdentityHarness, type TestUser, startIdentity, uniqueUsername } from './support/identity-harness.ts';
import { everyPage } from './support/pages.ts';

const NON_ADMIN_ROLES: readonly Role[] = ['GUEST', 'API_USER', 'STANDARD_USER', 'POWER_USER', 'EXTENDED_USER'];

interface Page {
  items: Array<{ userId: string; username: string; firstName: string; lastName: string; status: string; roles: string[]; account?: Record<string, unknown> }>;
  nextCursor: string | null;
}

/** A name no other test of the run uses, so that a `q` finds only this test's users. */
const marker = (label: string) => `${label}${randomBytes(5).toString('hex')}`;

describe('GET /v1/users', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const find = (query: string, token = adminToken) => request(identity.app).get(`/v1/users${query}`).set('Authorization', `Bearer ${token}`);
  const ids = (res: { body: Page }) => res.body.items.map((u) => u.userId);

  const everyUser = (query: string) => everyPage<Page['items'][number]>((q) => find(q), query);

  it('username: exactly, in any letter case; each user with its full account, nothing more', async () => {
    const user = await identity.createUser({ username: uniqueUsername('Ayse.Yilmaz'), midName: 'Nur' });
    const [account] = await identity.db('accounts').insert({ user_id: user.id, type: 'ORGANIZATION', subscription_plan: 'TRIAL', company: 'Kandilli' }).returning(['id', 'created_at', 'updated_at']);
    await identity.createUser({ username: `x${user.username}` });
    const res = await find(`?username=${encodeURIComponent(user.username.toUpperCase())}`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, {
      items: [
        {
          userId: user.id,
          username: user.username,
          firstName: 'Ada',
          midName: 'Nur',
          lastName: 'Lovelace',
          locale: 'en_US',
          timezone: 'Europe/Istanbul',
          roles: ['STANDARD_USER'],
          status: 'ACTIVE',
          account: {
            id: account.id,
            userId: user.id,
            type: 'ORGANIZATION',
            subscriptionPlan: 'TRIAL',
            company: 'Kandilli',
            emailVerified: false,
            mobilePhoneNumberVerified: false,
            createdAt: account.created_at.toISOString(),
            updatedAt: account.updated_at.toISOString(),
          },
        },
      ],
      nextCursor: null,
    });
    assert.deepEqual((await find(`?username=${encodeURIComponent(user.username.slice(1))}`)).body.items, [], 'exact, not a part');
  });

  it('q: a case-insensitive prefix of the username, first name or last name; % and _ are literal', async () => {
    const name = marker('Zeynep');
    const byFirst = await identity.createUser({ firstName: name });
    const byLast = await identity.createUser({ lastName: `${name}oglu` });
    const byUsername = await identity.createUser({ username: uniqueUsername(name.toLowerCase()) });
    await identity.createUser({ firstName: `x${name}`, lastName: `${name.slice(0, -1)}_` });
    assert.deepEqual(ids(await find(`?q=${name.toUpperCase()}`)), [byFirst.id, byLast.id, byUsername.id]);
    assert.deepEqual(ids(await find(`?q=${name}OG`)), [byLast.id]);
    const percent = await identity.createUser({ lastName: `${name}%` });
    assert.deepEqual(ids(await find(`?q=${encodeURIComponent(`${name}%`)}`)), [percent.id], '% matches only a %');
    assert.deepEqual(ids(await find(`?q=${encodeURIComponent(`${name.slice(0, -1)}_`)}`)), [(await identity.db('users').where('last_name', `${name.slice(0, -1)}_`).first('id')).id]);
  });

  it('status and role: one value each; all filters combine', async () => {
    const name = marker('Blocked');
    const blocked = await identity.createUser({ lastName: name, status: 'BLOCKED' });
    const blockedAdmin = await identity.createUser({ lastName: name, status: 'BLOCKED', roles: ['ADMIN', 'STANDARD_USER'] });
    const active = await identity.createUser({ lastName: name, roles: ['ADMIN'] });
    const everyBlocked = await everyUser('?status=BLOCKED&limit=200');
    assert.ok(everyBlocked.every((u) => u.status === 'BLOCKED'));
    assert.ok([blocked.id, blockedAdmin.id].every((id) => everyBlocked.some((u) => u.userId === id)));
    assert.deepEqual(ids(await find(`?q=${name}&status=BLOCKED`)), [blocked.id, blockedAdmin.id]);
    assert.deepEqual(ids(await find(`?q=${name}&role=ADMIN`)), [blockedAdmin.id, active.id]);
    assert.deepEqual(ids(await find(`?q=${name}&role=ADMIN&status=BLOCKED&username=${encodeURIComponent(blockedAdmin.username)}`)), [blockedAdmin.id]);
    assert.deepEqual(ids(await find(`?q=${name}&role=GUEST`)), []);
  });

  it('pages in creation order with limit and cursor, 50 by default', async () => {
    const name = marker('Page');
    const users: TestUser[] = [];
    for (let i = 0; i < 53; i += 1) users.push(await identity.createUser({ lastName: name }));
    const first = await find(`?q=${name}`);
    assert.deepEqual(ids(first), users.slice(0, 50).map((u) => u.id));
    const second = await find(`?q=${name}&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    assert.deepEqual([ids(second), second.body.nextCursor], [users.slice(50).map((u) => u.id), null]);
    assert.deepEqual((await everyUser(`?q=${name}&limit=1`)).map((u) => u.userId), users.map((u) => u.id));
    const exact = await find(`?q=${name}&limit=53`);
    assert.deepEqual([exact.body.items.length, exact.body.nextCursor], [53, null]);
  });

  it('when users are created while a listing runs, every user that was there is listed exactly once', async () => {
    const name = marker('Race');
    const there = await Promise.all(Array.from({ length: 30 }, () => identity.createUser({ lastName: name })));
    // Users created in one statement share a creation time: the id orders them.
    await identity.db('users').whereIn('id', there.slice(0, 10).map((u) => u.id)).update({ created_at: identity.db.raw("now() - interval '1 hour'") });
    const create = (i: number) =>
      request(identity.app)
        .post('/v1/users/create')
        .set('Authorization', `Bearer ${adminToken}`)
        .send({ username: uniqueUsername(`race${i}`), firstName: 'New', lastName: name, locale: 'en_US', timezone: 'UTC', roles: ['GUEST'], status: 'ACTIVE' });
    const [seen, created] = await Promise.all([everyUser(`?q=${name}&limit=4`), Promise.all(Array.from({ length: 15 }, (_, i) => create(i)))]);
    assert.ok(created.every((res) => res.status === 201));
    const seenIds = seen.map((u) => u.userId);
    assert.equal(new Set(seenIds).size, seenIds.length, 'a user was listed twice');
    for (const user of there) assert.equal(seenIds.filter((id) => id === user.id).length, 1, `${user.id} was not listed exactly once`);
    const after = await everyUser(`?q=${name}&limit=200`);
    assert.equal(after.length, 45);
  });

  it('when users leave the filter before the cursor, or one enters it there, while a listing runs, no other user is skipped or listed twice', async () => {
    const name = marker('Keyset');
    // Created first, so that it sorts before every user below once it matches the filter.
    const outsider = await identity.createUser({ lastName: marker('Outside') });
    const users: TestUser[] = [];
    for (let i = 0; i < 16; i += 1) users.push(await identity.createUser({ lastName: name }));
    const patch = (userId: string, fields: object) =>
      request(identity.app).patch('/v1/users/update').set('Authorization', `Bearer ${adminToken}`).send({ userId, ...fields }).expect(200);
    const query = `?q=${name}&status=ACTIVE&limit=4`;
    const pages: string[][] = [];
    let cursor: string | null = null;
    const nextPage = async () => {
      const res = await find(`${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      pages.push(ids(res));
      cursor = res.body.nextCursor;
    };
    await nextPage();
    await nextPage();
    // Five users already listed leave the filter: the whole first page renamed, one of the second blocked.
    // An offset of 8 would now start at the 14th user, skipping five that were never shown.
    for (const user of users.slice(0, 4)) await patch(user.id, { lastName: marker('Renamed') });
    await patch(users[5]!.id, { status: 'BLOCKED' });
    await nextPage();
    // One enters the filter before the cursor: an offset would now show the last user of page 3 again.
    await patch(outsider.id, { lastName: name });
    await nextPage();
    assert.equal(cursor, null);
    assert.deepEqual(pages, [0, 4, 8, 12].map((from) => users.slice(from, from + 4).map((u) => u.id)));
    // Control: the filter now holds what it says, so a new listing does see the changes.
    assert.deepEqual(
      (await everyUser(query)).map((u) => u.userId),
      [outsider, ...users.slice(4, 5), ...users.slice(6)].map((u) => u.id),
    );
  });

  it('when the caller holds any role but ADMIN, answers 403; without a token, 401', async () => {
    for (const role of NON_ADMIN_ROLES) {
      const res = await find('?status=BLOCKED', await identity.tokenFor([role]));
      assert.equal(res.status, 403, role);
    }
    assert.equal((await request(identity.app).get('/v1/users')).status, 401);
  });

  it('when a query parameter is wrong, unknown or repeated, or the cursor is not this list\'s, answers 400 naming it', async () => {
    const garbage = Buffer.from(JSON.stringify(['users', '2025-01-01T00:00:00.000000Z', 'nope'])).toString('base64url');
    const cases: Array<[string, RegExp]> = [
      ['?status=GONE', /query\.status/],
      ['?role=ROOT', /query\.role/],
      ['?q=', /query\.q/],
      [`?q=${'a'.repeat(256)}`, /query\.q/],
      ['?username=', /query\.username/],
      ['?limit=0', /query\.limit/],
      ['?limit=201', /query\.limit/],
      ['?limit=Infinity', /query\.limit/],
      ['?limit=0x10', /query\.limit/],
      ['?status=ACTIVE&status=BLOCKED', /query\.status/],
      ['?userId=8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e', /userId/],
      [`?cursor=${garbage}`, /query\.cursor is not a cursor of this list/],
      [`?cursor=${encodeCursor('sessions', { at: '2025-01-01T00:00:00.000000Z', id: '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e' })}`, /query\.cursor is not a cursor of this list/],
      ['?cursor=%00', /./],
    ];
    for (const [query, message] of cases) {
      const res = await find(query);
      assert.equal(res.status, 400, `${query}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.path, `/v1/users${query}`);
      assert.match(res.body.message, message, query);
    }
  });

  it('POST, PATCH or DELETE on /v1/users: 405 with Allow: GET', async () => {
    for (const method of ['post', 'patch', 'delete'] as const) {
      const res = await request(identity.app)[method]('/v1/users').set('Authorization', `Bearer ${adminToken}`).send({});
      assert.deepEqual([res.status, res.headers.allow], [405, 'GET'], method);
    }
  });
});
