import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { ensureBootstrapAdmin } from '../src/users/bootstrap-admin.ts';
import { type IdentityHarness, type TestUser, startIdentity, uniqueUsername } from './support/identity-harness.ts';

interface Event {
  type: string;
  actorUserId: string | null;
  subjectUserId: string | null;
  details: Record<string, unknown>;
}

const sidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sid as string;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Every change a flow makes is recorded, in its own transaction, with what changed and never a secret.
describe('the audit trail of each flow', () => {
  let identity: IdentityHarness;
  let admin: TestUser & { accessToken: string };
  /** Every password, token and code the flows below use: none may appear in any event. */
  const secrets: string[] = [];

  before(async () => {
    identity = await startIdentity();
    const user = await identity.createUser({ roles: ['ADMIN'] });
    admin = { ...user, accessToken: (await identity.login(user)).accessToken };
  });
  after(async () => {
    await identity.close();
  });

  const as = (token: string) => ({
    get: (path: string) => request(identity.app).get(path).set('Authorization', `Bearer ${token}`),
    post: (path: string, body: object) => request(identity.app).post(path).set('Authorization', `Bearer ${token}`).send(body),
    patch: (path: string, body: object) => request(identity.app).patch(path).set('Authorization', `Bearer ${token}`).send(body),
  });
  const anonymous = (path: string, body: object) => request(identity.app).post(path).send(body);

  /** The events about a user, oldest first (read through the API, as an operator would). */
  async function eventsOf(subjectUserId: string): Promise<Event[]> {
    const res = await as(admin.accessToken).get(`/v1/audit/events?subjectUserId=${subjectUserId}&limit=200`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return (res.body.items as Event[]).reverse();
  }
  const typesOf = async (subjectUserId: string) => (await eventsOf(subjectUserId)).map((e) => e.type);

  async function loggedIn(fields: Parameters<IdentityHarness['createUser']>[0] = {}) {
    const user = await identity.createUser(fields);
    secrets.push(user.password);
    const tokens = await identity.login(user);
    secrets.push(tokens.accessToken, tokens.refreshToken);
    return { ...user, ...tokens };
  }

  describe('login', () => {
    it('a failed login of an unknown username is recorded with the username as given and nobody as subject', async () => {
      const username = uniqueUsername('nobody');
      assert.equal((await anonymous('/v1/auth/login', { username, password: 'guessing-1' })).status, 401);
      const res = await as(admin.accessToken).get('/v1/audit/events?type=login.failed&limit=200');
      const event = (res.body.items as Event[]).find((e) => e.details.username === username);
      assert.deepEqual(event && { ...event, id: undefined, at: undefined, requestId: undefined }, {
        id: undefined,
        at: undefined,
        requestId: undefined,
        type: 'login.failed',
        actorUserId: null,
        subjectUserId: null,
        clientKeyId: null,
        sourceAddress: '127.0.0.1',
        details: { username, reason: 'unknown-username' },
      });
    });

    it('a failed login whose username is no address (a password typed into the wrong field) keeps only a keyed digest of it, the same for the same text', async () => {
      const typo = `Tr0ub4dor&3-${randomUUID().slice(0, 8)}`;
      for (let i = 0; i < 2; i++) assert.equal((await anonymous('/v1/auth/login', { username: typo, password: 'guessing-1' })).status, 401);
      assert.equal((await anonymous('/v1/auth/login', { username: `${typo}x`, password: 'guessing-1' })).status, 401);
      const res = await as(admin.accessToken).get('/v1/audit/events?type=login.failed&limit=3');
      const details = (res.body.items as Event[]).map((e) => e.details);
      assert.ok(!JSON.stringify(res.body).includes(typo), 'the text typed is nowhere in the trail');
      assert.ok(details.every((d) => d.username === undefined && typeof d.usernameDigest === 'string' && /^[0-9a-f]{32}$/.test(d.usernameDigest)), JSON.stringify(details));
      assert.deepEqual(details.map((d) => d.reason), ['unknown-username', 'unknown-username', 'unknown-username']);
      assert.notEqual(details[0]!.usernameDigest, details[1]!.usernameDigest, 'another text, another digest');
      assert.equal(details[1]!.usernameDigest, details[2]!.usernameDigest, 'the same text twice, the same digest');
      assert.equal(JSON.stringify(await identity.db('audit_events').whereRaw('details::text LIKE ?', [`%${typo.slice(0, 12)}%`]).first('id')), undefined);
    });

    it('a user who locks itself out: each failure counted, then the block and the end of its session, all recorded; a good login before', async () => {
      const user = await loggedIn();
      for (let i = 1; i <= 6; i += 1) assert.equal((await anonymous('/v1/auth/login', { username: user.username, password: `wrong-${i}` })).status, 401);
      const events = await eventsOf(user.id);
      assert.deepEqual(
        events.map((e) => e.type),
        ['login.succeeded', 'login.failed', 'login.failed', 'login.failed', 'login.failed', 'login.failed', 'login.failed', 'user.blocked', 'session.revoked'],
      );
      assert.deepEqual(events[1]!.details, { username: user.username, reason: 'wrong-password', failedLoginCount: 1 });
      assert.deepEqual(events[7]!.details, { failedLoginCount: 6 });
      assert.deepEqual(events[8]!.details, { sessionIds: [sidOf(user.accessToken)], reason: 'user-blocked' });
      assert.ok(events.every((e) => e.actorUserId === null && e.subjectUserId === user.id));

      // Even the right password fails now, and says why in the trail (not in the answer).
      assert.equal((await anonymous('/v1/auth/login', { username: user.username, password: user.password })).status, 401);
      assert.deepEqual((await eventsOf(user.id)).at(-1)!.details, { username: user.username, reason: 'user-not-active', status: 'BLOCKED' });

      const unblock = await as(admin.accessToken).get(`/v1/users/unblock/${user.id.toUpperCase()}`);
      assert.equal(unblock.status, 200);
      const unblocked = (await eventsOf(user.id)).at(-1)!;
      assert.deepEqual(unblocked, { ...unblocked, type: 'user.unblocked', actorUserId: admin.id, details: { previousStatus: 'BLOCKED', previousFailedLoginCount: 6 } });
    });
  });

  describe('users', () => {
    it('create: the new user with its roles and status, whether a password was set, and who made it', async () => {
      const username = uniqueUsername('created');
      const res = await as(admin.accessToken).post('/v1/users/create', {
        username,
        password: 'a-rare-first-password',
        firstName: 'Grace',
        lastName: 'Hopper',
        locale: 'en_US',
        timezone: 'UTC',
        roles: ['STANDARD_USER'],
        status: 'ACTIVE',
      });
      assert.equal(res.status, 201);
      secrets.push('a-rare-first-password');
      const [event, ...more] = await eventsOf(res.body.userId);
      assert.deepEqual(more, []);
      assert.deepEqual([event!.type, event!.actorUserId, event!.details], ['user.created', admin.id, { username, roles: ['STANDARD_USER'], status: 'ACTIVE', passwordSet: true }]);
      const again = await as(admin.accessToken).post('/v1/users/create', { username, firstName: 'G', lastName: 'H', locale: 'en_US', timezone: 'UTC', roles: ['GUEST'], status: 'ACTIVE' });
      assert.equal(again.status, 409);
      assert.deepEqual(await typesOf(res.body.userId), ['user.created'], 'a refused create records nothing');
    });

    it('update by an ADMIN: the changed fields, and roles, status and password each with an event of its own; the sessions it ended', async () => {
      const user = await loggedIn({ firstName: 'Ada' });
      const res = await as(admin.accessToken).patch('/v1/users/update', {
        userId: user.id,
        firstName: 'Ada',
        lastName: 'King',
        roles: ['POWER_USER', 'STANDARD_USER'],
        status: 'INACTIVE',
        password: 'an-admin-chosen-password',
      });
      assert.equal(res.status, 200);
      secrets.push('an-admin-chosen-password');
      const events = (await eventsOf(user.id)).slice(1);
      assert.deepEqual(
        events.map((e) => [e.type, e.details]),
        [
          ['user.updated', { fields: ['lastName', 'status', 'roles', 'password'] }],
          ['user.password_changed', {}],
          ['user.roles_changed', { previousRoles: ['STANDARD_USER'], newRoles: ['POWER_USER', 'STANDARD_USER'] }],
          ['user.status_changed', { previousStatus: 'ACTIVE', newStatus: 'INACTIVE' }],
          ['session.revoked', { sessionIds: [sidOf(user.accessToken)], reason: 'user-changed' }],
        ],
      );
      assert.ok(events.every((e) => e.actorUserId === admin.id));
    });

    it('update by an ADMIN that blocks a user and lifts the block: user.blocked and user.unblocked beside user.status_changed, saying it was an update', async () => {
      const user = await loggedIn();
      for (let i = 1; i <= 2; i += 1) assert.equal((await anonymous('/v1/auth/login', { username: user.username, password: `wrong-${i}` })).status, 401);
      const setStatus = async (status: string) => {
        const res = await as(admin.accessToken).patch('/v1/users/update', { userId: user.id, status });
        assert.deepEqual([res.status, res.body.status], [200, status], JSON.stringify(res.body));
      };
      const since = (await eventsOf(user.id)).length;
      await setStatus('BLOCKED');
      await setStatus('ACTIVE');
      const events = (await eventsOf(user.id)).slice(since);
      assert.deepEqual(
        events.map((e) => [e.type, e.details]),
        [
          ['user.updated', { fields: ['status'] }],
          ['user.status_changed', { previousStatus: 'ACTIVE', newStatus: 'BLOCKED' }],
          ['user.blocked', { by: 'update', previousStatus: 'ACTIVE' }],
          ['session.revoked', { sessionIds: [sidOf(user.accessToken)], reason: 'user-changed' }],
          ['user.updated', { fields: ['status'] }],
          ['user.status_changed', { previousStatus: 'BLOCKED', newStatus: 'ACTIVE' }],
          ['user.unblocked', { by: 'update', previousStatus: 'BLOCKED', previousFailedLoginCount: 2 }],
        ],
      );
      assert.ok(events.every((e) => e.actorUserId === admin.id));
      // Found by type, as an operator asks "who unblocked this user?", whichever operation did it.
      for (const type of ['user.blocked', 'user.unblocked']) {
        const res = await as(admin.accessToken).get(`/v1/audit/events?subjectUserId=${user.id}&type=${type}`);
        assert.deepEqual(res.body.items.map((e: Event) => [e.type, e.actorUserId, e.details.by]), [[type, admin.id, 'update']], type);
      }
    });

    it('update by an ADMIN between BLOCKED and INACTIVE, or INACTIVE and ACTIVE: a status change, but neither a block nor an unblock of its own', async () => {
      const user = await identity.createUser({ status: 'BLOCKED' });
      for (const status of ['INACTIVE', 'ACTIVE']) assert.equal((await as(admin.accessToken).patch('/v1/users/update', { userId: user.id, status })).status, 200, status);
      assert.deepEqual(
        (await eventsOf(user.id)).map((e) => [e.type, e.details]),
        [
          ['user.updated', { fields: ['status'] }],
          ['user.status_changed', { previousStatus: 'BLOCKED', newStatus: 'INACTIVE' }],
          ['user.updated', { fields: ['status'] }],
          ['user.status_changed', { previousStatus: 'INACTIVE', newStatus: 'ACTIVE' }],
        ],
      );
      // INACTIVE to BLOCKED is a block all the same: whatever it was, the user is now locked out by an ADMIN.
      assert.equal((await as(admin.accessToken).patch('/v1/users/update', { userId: user.id, status: 'INACTIVE' })).status, 200);
      assert.equal((await as(admin.accessToken).patch('/v1/users/update', { userId: user.id, status: 'BLOCKED' })).status, 200);
      const last = (await eventsOf(user.id)).at(-1)!;
      assert.deepEqual([last.type, last.details], ['user.blocked', { by: 'update', previousStatus: 'INACTIVE' }]);
    });

    it('update that changes nothing records nothing', async () => {
      const user = await loggedIn({ firstName: 'Same' });
      assert.equal((await as(user.accessToken).patch('/v1/users/update', { userId: user.id, firstName: 'Same', locale: 'en_US' })).status, 200);
      assert.deepEqual(await typesOf(user.id), ['login.succeeded']);
    });

    it('username change by the user itself: the old and new username; a wrong current password is a failed login', async () => {
      const user = await loggedIn();
      const wrong = await as(user.accessToken).patch('/v1/users/update', { userId: user.id, username: uniqueUsername('next'), currentPassword: 'not-my-password' });
      assert.equal(wrong.status, 403);
      assert.deepEqual((await eventsOf(user.id)).at(-1)!.details, { username: user.username, reason: 'wrong-current-password', failedLoginCount: 1 });

      const renamed = uniqueUsername('renamed');
      const res = await as(user.accessToken).patch('/v1/users/update', { userId: user.id, username: renamed, currentPassword: user.password });
      assert.equal(res.status, 200);
      const events = (await eventsOf(user.id)).slice(2);
      assert.deepEqual(
        events.map((e) => [e.type, e.actorUserId, e.details]),
        [
          ['user.updated', user.id, { fields: ['username'] }],
          ['user.username_changed', user.id, { previousUsername: user.username, newUsername: renamed }],
          ['session.revoked', user.id, { sessionIds: [sidOf(user.accessToken)], reason: 'username-changed' }],
        ],
      );
    });

    it('a username change refused because the address is taken records nothing', async () => {
      const user = await loggedIn();
      const taken = await identity.createUser();
      const res = await as(admin.accessToken).patch('/v1/users/update', { userId: user.id, username: taken.username, firstName: 'Changed' });
      assert.equal(res.status, 409);
      assert.deepEqual(await typesOf(user.id), ['login.succeeded']);
    });
  });

  describe('sessions and password reset', () => {
    it('logout ends the session, with the user as actor; a refresh token presented twice records the reuse and the end of the session', async () => {
      const user = await loggedIn();
      const first = await anonymous('/v1/auth/refresh', { refreshToken: user.refreshToken });
      assert.equal(first.status, 200);
      secrets.push(first.body.accessToken, first.body.refreshToken);
      assert.equal((await anonymous('/v1/auth/refresh', { refreshToken: user.refreshToken })).status, 401);
      const second = await identity.login(user);
      secrets.push(second.accessToken, second.refreshToken);
      assert.equal((await anonymous('/v1/auth/logout', { jwtToken: second.accessToken })).status, 200);
      assert.equal((await anonymous('/v1/auth/logout', { jwtToken: second.accessToken })).status, 200, 'twice');
      const events = await eventsOf(user.id);
      assert.deepEqual(
        events.map((e) => [e.type, e.actorUserId, e.details]),
        [
          ['login.succeeded', null, { sessionId: sidOf(user.accessToken) }],
          ['refresh_token.reused', null, { sessionId: sidOf(user.accessToken) }],
          ['session.revoked', null, { sessionIds: [sidOf(user.accessToken)], reason: 'refresh-token-reuse' }],
          ['login.succeeded', null, { sessionId: sidOf(second.accessToken) }],
          ['session.revoked', user.id, { sessionIds: [sidOf(second.accessToken)], reason: 'logout' }],
        ],
      );
    });

    it('reset requested (anonymously by e-mail, by an ADMIN as a ticket) and completed, with the sessions it ended, never the token', async () => {
      const user = await loggedIn();
      assert.equal((await anonymous('/v1/users/password-reset-request', { username: user.username })).status, 202);
      for (const deadline = Date.now() + 3000; !(await typesOf(user.id)).includes('password_reset.requested') && Date.now() < deadline; ) await sleep(10);
      const ticket = await as(admin.accessToken).post('/v1/users/password-reset-request', { username: user.username });
      assert.equal(ticket.status, 201);
      secrets.push(ticket.body.token);
      const reset = await anonymous('/v1/users/password-reset', { userId: user.id, token: ticket.body.token, newPassword: 'a-brand-new-passphrase' });
      assert.equal(reset.status, 200);
      secrets.push('a-brand-new-passphrase');
      const events = (await eventsOf(user.id)).slice(1);
      assert.deepEqual(
        events.map((e) => [e.type, e.actorUserId, e.details.delivery ?? e.details.reason ?? null]),
        [
          ['password_reset.requested', null, 'e-mail'],
          ['password_reset.requested', admin.id, 'ticket'],
          ['password_reset.completed', null, null],
          ['session.revoked', null, 'password-reset'],
        ],
      );
      assert.equal(events[1]!.details.expiresAt, ticket.body.expiresAt);
    });
  });

  describe('accounts and phone activation', () => {
    it('account created and updated (only the fields that changed), code sent and number verified', async () => {
      const user = await loggedIn();
      const created = await as(user.accessToken).post('/v1/accounts/create', { userId: user.id, type: 'INDIVIDUAL', company: 'Analytical', mobilePhoneNumber: '+905321234567' });
      assert.equal(created.status, 201);
      const accountId = created.body.id as string;
      const updated = await as(admin.accessToken).patch('/v1/accounts/update', { accountId, company: 'Analytical', location: 'London' });
      assert.equal(updated.status, 200);
      const sent = await as(user.accessToken).post('/v1/accounts/phone-number-activation-request', {
        userId: user.id,
        accountId,
        phoneNumberActivationPageLink: 'http://localhost:3000/activate',
      });
      assert.equal(sent.status, 200);
      const [sms] = (await identity.sms.waitFor(identity.sms.received.length)).slice(-1);
      const code = /\b(\d{6})\b/.exec((sms!.body as { message: string }).message)![1]!;
      secrets.push(code);
      assert.equal((await as(user.accessToken).post('/v1/accounts/phone-number-activation', { accountId, code })).status, 200);
      const events = (await eventsOf(user.id)).slice(1);
      assert.deepEqual(
        events.map((e) => [e.type, e.actorUserId, e.details]),
        [
          ['account.created', user.id, { accountId, type: 'INDIVIDUAL', subscriptionPlan: 'NONE' }],
          ['account.updated', admin.id, { accountId, fields: ['location'] }],
          ['phone.code_sent', user.id, { accountId, recipientPhoneNumber: '+905321234567' }],
          ['phone.verified', user.id, { accountId, phoneNumber: '+905321234567' }],
        ],
      );
    });
  });

  describe('the bootstrap ADMIN', () => {
    it('is recorded as created by nobody, once', async () => {
      const username = uniqueUsername('bootstrap');
      for (let i = 0; i < 2; i += 1) await ensureBootstrapAdmin({ db: identity.db, hasher: identity.hasher, logger: identity.log.logger }, { username, password: 'bootstrap-secret-1' });
      secrets.push('bootstrap-secret-1');
      const { id } = (await identity.db('users').where({ username }).first('id')) as { id: string };
      const events = await eventsOf(id);
      assert.deepEqual(
        events.map((e) => [e.type, e.actorUserId, e.details]),
        [['user.created', null, { username, roles: ['ADMIN'], status: 'ACTIVE', bootstrap: true }]],
      );
    });
  });

  // Declared last, so mocha runs it after every flow above.
  describe('secrets', () => {
    it('no event holds a password, token, code or hash (every event the flows above wrote)', async () => {
      const rows = (await identity.db('audit_events').select(identity.db.raw('row_to_json(audit_events)::text AS text'))) as Array<{ text: string }>;
      assert.ok(rows.length > 40, `only ${rows.length} events`);
      assert.ok(secrets.length > 20);
      const hashes = ((await identity.db('users').whereNotNull('password_hash').select('password_hash')) as Array<{ password_hash: string }>).map((r) => r.password_hash);
      for (const { text } of rows) {
        for (const secret of [...secrets, ...hashes]) assert.ok(!text.includes(secret), `an event holds a secret: ${text}`);
        assert.doesNotMatch(text, /\$2[aby]\$\d\d\$/, 'a bcrypt hash');
        assert.doesNotMatch(text, /"(password|newPassword|currentPassword|token|accessToken|refreshToken|code|hash|passwordHash)"\s*:/i, `a secret's field: ${text}`);
      }
    });
  });
});

describe('an event and its change commit together', () => {
  let identity: IdentityHarness;
  let adminToken: string;

  before(async () => {
    identity = await startIdentity();
    adminToken = await identity.tokenFor(['ADMIN']);
    // Test-only faults, keyed by user id so that nothing else in this file meets them.
    await identity.db.raw(`
      CREATE TABLE audit_refused_subjects (id uuid PRIMARY KEY);
      CREATE FUNCTION refuse_audit_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM audit_refused_subjects WHERE id = NEW.subject_user_id) THEN RAISE EXCEPTION 'audit store refused'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER audit_events_refuse BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit_event();

      CREATE TABLE commit_refused_users (id uuid PRIMARY KEY);
      CREATE FUNCTION refuse_user_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM commit_refused_users WHERE id = NEW.id) THEN RAISE EXCEPTION 'commit refused'; END IF;
        RETURN NEW;
      END $$;
      -- Checked at COMMIT, after the change and its event were both written.
      CREATE CONSTRAINT TRIGGER users_refuse_commit AFTER UPDATE ON users DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION refuse_user_commit();
    `);
  });
  after(async () => {
    await identity.close();
  });

  const admin = () => ({
    get: (path: string) => request(identity.app).get(path).set('Authorization', `Bearer ${adminToken}`),
    patch: (body: object) => request(identity.app).patch('/v1/users/update').set('Authorization', `Bearer ${adminToken}`).send(body),
  });
  const eventCount = async (subject: string) => Number(((await identity.db('audit_events').where({ subject_user_id: subject }).count('* as n').first()) as { n: string }).n);

  it('when the event cannot be written, the change is not made either (unblock, role change, account create answer 500 and change nothing)', async () => {
    const blocked = await identity.createUser({ status: 'BLOCKED' });
    const other = await identity.createUser();
    const session = await identity.login(other);
    await identity.db('audit_refused_subjects').insert([{ id: blocked.id }, { id: other.id }]);
    const before = await eventCount(other.id);

    assert.equal((await admin().get(`/v1/users/unblock/${blocked.id}`)).status, 500);
    assert.equal(((await identity.db('users').where({ id: blocked.id }).first('status')) as { status: string }).status, 'BLOCKED');

    assert.equal((await admin().patch({ userId: other.id, roles: ['ADMIN'] })).status, 500);
    const stored = (await identity.db('users').where({ id: other.id }).first('roles')) as { roles: string[] };
    assert.deepEqual(stored.roles, ['STANDARD_USER']);
    assert.equal((await request(identity.app).get(`/v1/accounts/${other.id}`).set('Authorization', `Bearer ${session.accessToken}`)).status, 404, 'the session was not ended');

    const account = await request(identity.app).post('/v1/accounts/create').set('Authorization', `Bearer ${session.accessToken}`).send({ userId: other.id, type: 'INDIVIDUAL' });
    assert.equal(account.status, 500);
    assert.equal(await identity.db('accounts').where({ user_id: other.id }).first(), undefined);
    assert.equal(await eventCount(other.id), before);
    assert.equal(await eventCount(blocked.id), 0);
  });

  it('when the change rolls back after its event was written, the event goes with it', async () => {
    const user = await identity.createUser({ firstName: 'Before' });
    await identity.db('commit_refused_users').insert({ id: user.id });
    const res = await admin().patch({ userId: user.id, firstName: 'After', roles: ['POWER_USER'] });
    assert.equal(res.status, 500);
    assert.equal(((await identity.db('users').where({ id: user.id }).first('first_name')) as { first_name: string }).first_name, 'Before');
    assert.equal(await eventCount(user.id), 0);

    // Control: the same update of a user whose commit is not refused is made and recorded.
    const control = await identity.createUser({ firstName: 'Before' });
    assert.equal((await admin().patch({ userId: control.id, firstName: 'After', roles: ['POWER_USER'] })).status, 200);
    assert.equal(await eventCount(control.id), 2);
  });

  it('when an unblock by update rolls back, its user.unblocked goes with it and the user stays BLOCKED', async () => {
    const user = await identity.createUser({ status: 'BLOCKED' });
    await identity.db('commit_refused_users').insert({ id: user.id });
    assert.equal((await admin().patch({ userId: user.id, status: 'ACTIVE' })).status, 500);
    assert.equal(((await identity.db('users').where({ id: user.id }).first('status')) as { status: string }).status, 'BLOCKED');
    assert.equal(await eventCount(user.id), 0);
  });

  it('a login whose username is not well-formed text (a lone surrogate) is refused with 400 before anything is recorded', async () => {
    const marker = randomUUID();
    const res = await request(identity.app).post('/v1/auth/login').send({ username: `\ud800${marker}\udfff`, password: 'whatever-1' });
    assert.equal(res.status, 400);
    assert.match(res.body.message, /well-formed Unicode/);
    assert.equal(await identity.db('audit_events').whereRaw("details->>'username' LIKE ?", [`%${marker}%`]).first('id'), undefined);
  });

  it('a failed login of an unknown username leaves an event and nothing else', async () => {
    const username = `${randomUUID()}@example.com`;
    const users = await identity.db('users').count('* as n').first();
    assert.equal((await request(identity.app).post('/v1/auth/login').send({ username, password: 'whatever-1' })).status, 401);
    assert.deepEqual(await identity.db('users').count('* as n').first(), users);
    const event = (await identity.db('audit_events').whereRaw("details->>'username' = ?", [username]).first('type', 'subject_user_id')) as { type: string; subject_user_id: string | null };
    assert.deepEqual(event, { type: 'login.failed', subject_user_id: null });
  });
});
