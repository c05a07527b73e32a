import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Role } from '@platform/auth';
import request from 'supertest';
import { encodeCursor } from '../src/pagination/cursor.ts';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';
import { everyPage } from './support/pages.ts';

const NON_ADMIN_ROLES: readonly Role[] = ['GUEST', 'API_USER', 'STANDARD_USER', 'POWER_USER', 'EXTENDED_USER'];

interface Page {
  items: Array<{ id: string; type: string; at: string; subjectUserId: string | null; actorUserId: string | null; details: Record<string, unknown> }>;
  nextCursor: string | null;
}

describe('GET /v1/audit/events', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
  });
  after(async () => {
    await identity.close();
  });

  const list = (query: string, token = adminToken) => request(identity.app).get(`/v1/audit/events${query}`).set('Authorization', `Bearer ${token}`);

  /** `count` events about a new subject, stored directly; every `tie` of them share one instant (ties are broken by id). */
  async function storedEvents(count: number, tie = 1): Promise<{ subject: string; ids: string[] }> {
    const subject = randomUUID();
    const start = Date.parse('2025-03-01T12:00:00.000Z');
    const rows = Array.from({ length: count }, (_, i) => ({
      type: 'user.updated',
      at: new Date(start + Math.floor(i / tie) * 1000),
      subject_user_id: subject,
      details: { fields: ['firstName'], n: i },
    }));
    const inserted = (await identity.db('audit_events').insert(rows).returning('id')) as Array<{ id: string }>;
    return { subject, ids: inserted.map((r) => r.id) };
  }

  const everyEvent = (query: string) => everyPage<Page['items'][number]>((q) => list(q), query);

  it('when an ADMIN asks, answers 200 with the events of a request: type, time, actor, subject, source, request id, details', async () => {
    const user = await identity.createUser();
    const before = Date.now();
    const login = await request(identity.app).post('/v1/auth/login').send({ username: user.username, password: user.password });
    assert.equal(login.status, 200);
    const res = await list(`?subjectUserId=${user.id}`);
    assert.equal(res.status, 200);
    const { items, nextCursor } = res.body as Page;
    assert.equal(nextCursor, null);
    assert.equal(items.length, 1);
    const [event] = items;
    const { id, at, details, ...rest } = event as Page['items'][number] & Record<string, unknown>;
    assert.match(id, /^[0-9a-f-]{36}$/);
    assert.ok(Date.parse(at) >= before - 1000 && Date.parse(at) <= Date.now() + 1000, at);
    const sid = JSON.parse(Buffer.from(login.body.accessToken.split('.')[1], 'base64url').toString()).sid as string;
    assert.deepEqual(details, { sessionId: sid });
    // Called directly (not through the gateway): no client key; the address is the socket's.
    assert.deepEqual(rest, {
      type: 'login.succeeded',
      actorUserId: null,
      subjectUserId: user.id,
      clientKeyId: null,
      sourceAddress: '127.0.0.1',
      requestId: login.headers['x-request-id'],
    });
  });

  it('answers newest first; filters by subject, actor, type and time, all combined', async () => {
    const { subject, ids } = await storedEvents(4);
    const other = randomUUID();
    await identity.db('audit_events').insert({ type: 'user.blocked', at: new Date('2025-03-01T12:00:02.500Z'), subject_user_id: subject, actor_user_id: other });
    const all = (await list(`?subjectUserId=${subject}`)).body as Page;
    assert.deepEqual(
      all.items.map((e) => e.details.n ?? e.type),
      [3, 'user.blocked', 2, 1, 0],
    );
    assert.deepEqual((await list(`?subjectUserId=${subject}&type=user.blocked`)).body.items.map((e: { type: string }) => e.type), ['user.blocked']);
    assert.deepEqual((await list(`?actorUserId=${other}`)).body.items.map((e: { subjectUserId: string }) => e.subjectUserId), [subject]);
    // since inclusive, until exclusive; an upper-case id is the same id.
    const window = await list(`?subjectUserId=${subject.toUpperCase()}&since=2025-03-01T12:00:01Z&until=2025-03-01T12:00:03Z`);
    assert.deepEqual(
      window.body.items.map((e: Page['items'][number]) => e.id),
      [all.items[1]!.id, all.items[2]!.id, ids[1]],
    );
    // Bounds outside the years any event can have (year 0 included) select what the nearest possible one would.
    assert.equal((await list(`?subjectUserId=${subject}&since=0000-01-01T00:00:00Z`)).body.items.length, 5);
  });

  it('pages with limit and cursor: every event once, in order, and the last page says so', async () => {
    const { subject, ids } = await storedEvents(23, 4);
    const first = await list(`?subjectUserId=${subject}&limit=10`);
    assert.equal(first.body.items.length, 10);
    assert.equal(typeof first.body.nextCursor, 'string');
    const items = await everyEvent(`?subjectUserId=${subject}&limit=10`);
    // Newest first; events of the same instant in the reverse order of their insertion.
    const expected = (await identity.db('audit_events').whereIn('id', ids).orderBy([{ column: 'at', order: 'desc' }, { column: 'seq', order: 'desc' }]).select('id')) as Array<{ id: string }>;
    // One insert wrote them oldest first, so within each instant too the newest comes first.
    assert.deepEqual(
      items.map((e) => e.details.n),
      Array.from({ length: 23 }, (_, i) => 22 - i),
    );
    assert.deepEqual(
      items.map((e) => e.id),
      expected.map((e) => e.id),
    );
    const exact = await list(`?subjectUserId=${subject}&limit=23`);
    assert.deepEqual([exact.body.items.length, exact.body.nextCursor], [23, null]);
    assert.equal((await list(`?subjectUserId=${subject}`)).body.items.length, 23, 'the default limit is 50');
  });

  it('when events are added while a listing runs, it still shows every event that was there exactly once', async () => {
    const { subject, ids } = await storedEvents(40, 3);
    const added: string[] = [];
    const [seen] = await Promise.all([
      everyEvent(`?subjectUserId=${subject}&limit=7`),
      (async () => {
        for (let i = 0; i < 20; i += 1) {
          const [row] = (await identity.db('audit_events').insert({ type: 'user.updated', subject_user_id: subject }).returning('id')) as Array<{ id: string }>;
          added.push(row!.id);
        }
      })(),
    ]);
    const seenIds = seen.map((e) => e.id);
    assert.equal(new Set(seenIds).size, seenIds.length, 'an event was shown twice');
    for (const id of ids) assert.equal(seenIds.filter((s) => s === id).length, 1, `event ${id} was not shown exactly once`);
    assert.ok(seenIds.every((id) => ids.includes(id) || added.includes(id)));
  });

  it('when the caller holds any role but ADMIN, answers 403; without a token, 401', async () => {
    for (const role of NON_ADMIN_ROLES) {
      const res = await list('', await identity.tokenFor([role]));
      assert.equal(res.status, 403, role);
      assert.equal(res.body.error, 'Forbidden');
    }
    const anonymous = await request(identity.app).get('/v1/audit/events');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.message, 'Bad Credentials');
  });

  it('when a query parameter is wrong, unknown or repeated, answers 400 in the error shape naming it', async () => {
    const bad: Array<[string, RegExp]> = [
      ['?limit=0', /query\.limit/],
      ['?limit=201', /query\.limit/],
      ['?limit=abc', /query\.limit/],
      ['?limit=1e2', /query\.limit/],
      ['?limit=10.5', /query\.limit/],
      ['?limit=', /query\.limit/],
      ['?type=user.deleted', /query\.type/],
      ['?subjectUserId=42', /query\.subjectUserId/],
      ['?actorUserId=urn:uuid:8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e', /query\.actorUserId/],
      ['?since=yesterday', /query\.since/],
      ['?since=2025-03-02T00:00:00Z&until=2025-03-01T00:00:00Z', /query\.since must not be later than query\.until/],
      ['?until=2016-12-31T23:59:60Z', /query\.until/],
      // Instants that do not exist, which Date.parse would roll over into others.
      ['?since=2026-02-30T00:00:00Z', /query\.since must be a date-time .*day 30 is not a day of 2026-02/],
      ['?until=2026-01-01T24:00:00Z', /query\.until must be a date-time .*hour 24 is not 00-23/],
      ['?unknown=1', /unknown/],
      ['?type=login.failed&type=login.succeeded', /query\.type/],
      ['?cursor=', /query\.cursor/],
    ];
    for (const [query, message] of bad) {
      const res = await list(query);
      assert.equal(res.status, 400, `${query}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.path, `/v1/audit/events${query}`);
      assert.match(res.body.message, message, query);
    }
  });

  it('when the cursor is not one this list issued (garbage, tampered, another list\'s), answers 400 and asks to start again', async () => {
    const { subject } = await storedEvents(3);
    const genuine = (await list(`?subjectUserId=${subject}&limit=1`)).body.nextCursor as string;
    const [, at, id] = JSON.parse(Buffer.from(genuine, 'base64url').toString()) as string[];
    const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    for (const cursor of [
      'garbage',
      'x'.repeat(512),
      genuine.slice(0, -3),
      encodeCursor('users', { at: at!, id: id! }),
      forged(['audit-events', '2025-02-30T12:00:00.000000Z', id]),
      forged(['audit-events', '0000-01-01T00:00:00.000000Z', id]),
      forged(['audit-events', at, 'not-a-number']),
      forged(['audit-events', at, '99999999999999999999']),
      forged(['audit-events', at, '8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e']),
      forged(['audit-events', at, id, 'more']),
      forged({ list: 'audit-events', at, id }),
    ]) {
      const res = await list(`?subjectUserId=${subject}&cursor=${encodeURIComponent(cursor)}`);
      assert.equal(res.status, 400, `${cursor}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.message, 'query.cursor is not a cursor of this list; start again without it');
    }
    assert.equal((await list(`?subjectUserId=${subject}&cursor=${genuine}`)).status, 200, 'control: the genuine cursor works');
  });

  it('when the method is not GET, answers 405 with Allow: GET', async () => {
    for (const method of ['post', 'delete', 'patch'] as const) {
      const res = await request(identity.app)[method]('/v1/audit/events').set('Authorization', `Bearer ${adminToken}`).send({});
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.allow, 'GET');
    }
  });
});
