import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ApiError, type Client, allPages, createClient } from '@platform/client';
import { type CaptureServer, startCaptureServer } from '../../services/identity/test/support/capture-server.ts';
import { type Stack, startStack } from './support/stack.ts';

// The whole platform as a client meets it: three real processes, real Postgres and Redis, every call
// signed by the SDK and sent through the gateway.
describe('end to end, through the gateway with the SDK', function () {
  this.timeout(90_000);
  let stack: Stack;
  let mail: CaptureServer;
  let sms: CaptureServer;

  before(async () => {
    mail = await startCaptureServer();
    sms = await startCaptureServer();
    stack = await startStack({ mailUrl: mail.url, smsUrl: sms.url });
  });
  after(async () => {
    await stack?.stop();
    await mail?.close();
    await sms?.close();
  });

  const client = (): Client =>
    createClient({ env: 'local', baseUrl: stack.gatewayUrl, keyId: 'local-dev', key: { alg: 'hmac-sha256', secret: 'local-dev-secret' } });

  async function adminClient(): Promise<Client> {
    const admin = client();
    await admin.auth.login(stack.admin);
    return admin;
  }

  async function newUser(admin: Client, password = 'a-good-password-1') {
    const username = `user-${randomUUID()}@example.com`;
    const user = await admin.users.create({
      username,
      password,
      firstName: 'Ayşe',
      lastName: 'Yılmaz',
      locale: 'tr_TR',
      timezone: 'Europe/Istanbul',
      roles: ['STANDARD_USER'],
      status: 'ACTIVE',
    });
    return { ...user, password };
  }

  /** Runs `call` and returns the ApiError it must throw. */
  async function refused(call: () => Promise<unknown>): Promise<ApiError> {
    try {
      await call();
    } catch (err) {
      if (err instanceof ApiError) return err;
      throw err;
    }
    assert.fail('the call was expected to be refused');
  }

  it('admin creates a user; the user logs in, opens an account, activates the phone, looks up stations, refreshes and logs out', async () => {
    const admin = await adminClient();
    const created = await newUser(admin);
    assert.equal(created.status, 'ACTIVE');

    const user = client();
    const login = await user.auth.login({ username: created.username, password: created.password });
    assert.equal(login.type, 'Bearer');

    const account = await user.accounts.create({ userId: created.userId, type: 'INDIVIDUAL', mobilePhoneNumber: '0532 765 43 21', company: 'Kandilli' });
    assert.equal(account.mobilePhoneNumberVerified, false);
    assert.equal((await user.accounts.get(created.userId)).id, account.id);

    const ticket = await user.accounts.requestPhoneActivation({
      userId: created.userId,
      accountId: account.id,
      phoneNumberActivationPageLink: 'http://localhost:3000/activate',
    });
    assert.deepEqual([ticket.recipientPhoneNumber, ticket.smsSent], ['+905327654321', true]);
    const [text] = (await sms.waitFor(1)).map((r) => (r.body as { message: string }).message);
    const code = /\b(\d{6})\b/.exec(text!)![1]!;
    const verified = await user.accounts.activatePhone({ accountId: account.id, code });
    assert.equal(verified.mobilePhoneNumberVerified, true);

    const cities = await user.stations.cities();
    assert.equal(cities.length, 81);
    assert.ok((await user.stations.districtsOf('istanbul')).includes('Bağcılar'));
    const stations = await user.stations.byCityDistrict({ city: 'İSTANBUL', district: 'bagcilar' });
    assert.ok(stations.some((s) => s.stationId === 17814), JSON.stringify(stations));
    assert.equal((await user.stations.byId(17814)).city, 'İstanbul');
    const [nearest] = await user.stations.nearest({ latitude: 40.128, longitude: 32.995, limit: 1 });
    assert.equal(nearest!.stationId, 17128);

    const renewed = await user.auth.refresh();
    assert.notEqual(renewed.refreshToken, login.refreshToken);
    const stale = client();
    stale.setTokens(login);
    assert.equal((await refused(() => stale.auth.refresh(login.refreshToken))).status, 401, 'the rotated refresh token is dead');

    // Reusing the rotated token ended the session: the renewed tokens are refused too.
    const ended = await refused(() => user.stations.cities());
    assert.equal(ended.status, 401);

    const again = client();
    const second = await again.auth.login({ username: created.username, password: created.password });
    await again.auth.logout();
    const afterLogout = client();
    afterLogout.setTokens(second);
    const rejected = await refused(() => afterLogout.stations.cities());
    assert.equal(rejected.status, 401);
    assert.equal(rejected.body.message, 'Bad Credentials');
  });

  it('six wrong passwords block a user; an admin unblocks; the user logs in again', async () => {
    const admin = await adminClient();
    const created = await newUser(admin);
    const attacker = client();
    for (let i = 0; i < 6; i += 1) {
      const err = await refused(() => attacker.auth.login({ username: created.username, password: `wrong-${i}` }));
      assert.equal(err.status, 401);
    }
    const blocked = await refused(() => client().auth.login({ username: created.username, password: created.password }));
    assert.equal(blocked.body.message, 'Bad Credentials');
    const blockMail = (await mail.waitFor(1)).find((r) => (r.body as { to: string }).to === created.username);
    assert.ok(blockMail, 'the owner was told');

    const unblocked = await admin.users.unblock(created.userId);
    assert.equal(unblocked.status, 'ACTIVE');
    assert.ok((await client().auth.login({ username: created.username, password: created.password })).accessToken);
  });

  it('the operator\'s story: a user locks itself out; the ADMIN finds it among the BLOCKED, reads its audit events, unblocks it; its sessions show only the new login', async () => {
    const admin = await adminClient();
    const adminId = (await admin.users.find({ username: stack.admin.username })).items[0]!.userId;
    const created = await newUser(admin);
    const user = client();
    const before = await user.auth.login({ username: created.username, password: created.password });

    // "My account is blocked": six wrong passwords, then the right one is refused too.
    for (let i = 0; i < 6; i += 1) await refused(() => client().auth.login({ username: created.username, password: `forgotten-${i}` }));
    assert.equal((await refused(() => client().auth.login({ username: created.username, password: created.password }))).status, 401);

    // The ADMIN knows only the address; GET /v1/users?status=BLOCKED, page after page, finds the userId.
    const blocked: Array<{ userId: string; status: string }> = [];
    for await (const found of allPages((cursor) => admin.users.find({ status: 'BLOCKED', limit: 2, cursor }))) blocked.push(found);
    assert.ok(blocked.every((u) => u.status === 'BLOCKED'));
    const found = blocked.find((u) => u.userId === created.userId);
    assert.ok(found, 'the blocked user is listed');

    // What happened to it, newest first, each with the client key and the address it came from.
    const trail = (await admin.audit.events({ subjectUserId: found.userId })).items;
    assert.deepEqual(
      trail.map((e) => e.type),
      ['login.failed', 'session.revoked', 'user.blocked', ...Array<string>(6).fill('login.failed'), 'login.succeeded', 'user.created'],
    );
    const failures = trail.filter((e) => e.type === 'login.failed');
    assert.ok(failures.every((e) => e.clientKeyId === 'local-dev' && e.sourceAddress === '127.0.0.1' && e.actorUserId === null), JSON.stringify(failures[0]));
    assert.deepEqual(trail[0]!.details, { username: created.username, reason: 'user-not-active', status: 'BLOCKED' });
    const sidOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sid as string;
    assert.deepEqual(trail[1]!.details, { sessionIds: [sidOf(before.accessToken)], reason: 'user-blocked' });
    assert.equal(trail.at(-1)!.actorUserId, adminId);

    await admin.users.unblock(found.userId);
    const [unblocked] = (await admin.audit.events({ subjectUserId: found.userId, type: 'user.unblocked' })).items;
    assert.deepEqual([unblocked!.actorUserId, unblocked!.clientKeyId, unblocked!.details.previousStatus], [adminId, 'local-dev', 'BLOCKED']);

    // The user logs in again: its sessions list holds that login alone, the one from before the block is gone.
    const again = await user.auth.login({ username: created.username, password: created.password });
    const { items: sessions, nextCursor } = await user.sessions.list();
    assert.equal(nextCursor, null);
    assert.deepEqual(
      sessions.map((s) => [s.sessionId, s.current, s.clientKeyId, s.sourceAddress]),
      [[sidOf(again.accessToken), true, 'local-dev', '127.0.0.1']],
    );
    assert.deepEqual((await admin.sessions.list({ userId: found.userId })).items.map((s) => s.sessionId), [sidOf(again.accessToken)]);
  });

  it('a password reset by e-mail link ends with a redirect to the login page, and the new password works', async () => {
    const admin = await adminClient();
    const created = await newUser(admin, 'the-old-password');
    const anonymous = client();
    assert.equal(await anonymous.users.requestPasswordReset({ username: created.username, resetPageLink: 'http://localhost:3000/reset' }), null);

    const deadline = Date.now() + 5000;
    let link: URL | undefined;
    while (link === undefined && Date.now() < deadline) {
      const sent = mail.received.find((r) => (r.body as { to: string; subject: string }).to === created.username && /reset/i.test((r.body as { subject: string }).subject));
      const found = sent && /http:\/\/localhost:3000\/reset\?\S+/.exec((sent.body as { text: string }).text);
      if (found) link = new URL(found[0]);
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(link, 'the reset e-mail arrived');
    const outcome = await anonymous.users.resetPassword({
      userId: link.searchParams.get('userId')!,
      token: link.searchParams.get('token')!,
      newPassword: 'the-new-password',
      loginPageLink: 'http://localhost:3000/login?from=reset',
    });
    assert.ok('redirectTo' in outcome, JSON.stringify(outcome));
    const target = new URL(outcome.redirectTo);
    assert.equal(`${target.origin}${target.pathname}`, 'http://localhost:3000/login');
    assert.equal(target.searchParams.get('from'), 'reset');
    assert.ok(target.searchParams.get('message'));

    assert.equal((await refused(() => client().auth.login({ username: created.username, password: 'the-old-password' }))).status, 401);
    assert.ok((await client().auth.login({ username: created.username, password: 'the-new-password' })).accessToken);
  });

  it('an unsigned request never reaches a service', async () => {
    const res = await fetch(`${stack.gatewayUrl}/v1/weather-stations/get-cities`, { headers: { 'x-idempotency-key': randomUUID() } });
    assert.equal(res.status, 401);
    assert.equal(((await res.json()) as { message: string }).message, 'Invalid request signature');
  });
});
