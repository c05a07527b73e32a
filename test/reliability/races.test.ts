import assert from 'node:assert/strict';
import { newIdempotencyKey } from '../../gateway/test/support/signing-client.ts';
import type { Answer } from './support/raw-http.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';

const N = 12;
const PAGE = 'http://localhost:3000/activate';

/** How many answers had each status, e.g. `{ 201: 1, 409: 11 }`. */
function tally(answers: readonly Answer[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const { status } of answers) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

const uniquePhone = () => `+90532${String(Math.floor(Math.random() * 10_000_000)).padStart(7, '0')}`;

describe('races through the gateway: N identical requests at once, the invariants hold', function () {
  this.timeout(60_000);
  let stack: Stack;
  let admin: LoggedInUser;

  before(async () => {
    stack = await startStack({ env: { AUTH_MAX_FAILED_LOGINS: '5' } });
    admin = await stack.userWith(['ADMIN']);
  });
  after(async () => {
    await stack?.close();
  });

  const all = <T>(make: (i: number) => Promise<T>) => Promise.all(Array.from({ length: N }, (_, i) => make(i)));
  const countRows = async (table: string, where: Record<string, unknown>) => Number(((await stack.identity.db(table).where(where).count({ n: '*' })) as Array<{ n: string }>)[0]!.n);

  async function userWithAccount(phone = uniquePhone()): Promise<{ user: LoggedInUser; accountId: string }> {
    const user = await stack.userWith(['STANDARD_USER']);
    const res = await stack.call('POST', '/v1/accounts/create', {
      bearer: user.accessToken,
      body: { userId: user.id, type: 'INDIVIDUAL', subscriptionPlan: 'TRIAL', mobilePhoneNumber: phone },
    });
    assert.equal(res.status, 201, res.body.toString());
    return { user, accountId: res.json().id as string };
  }

  it('when one user is created N times at once (in varied letter case), exactly one wins and one row exists', async () => {
    const username = `race-${Date.now()}@example.com`;
    const answers = await all((i) =>
      stack.call('POST', '/v1/users/create', {
        bearer: admin.accessToken,
        body: { username: i % 2 === 0 ? username : username.toUpperCase(), firstName: 'R', lastName: 'C', locale: 'en_US', timezone: 'UTC', roles: ['STANDARD_USER'], status: 'ACTIVE' },
      }),
    );
    assert.deepEqual(tally(answers), { 201: 1, 409: N - 1 });
    assert.ok(answers.filter((a) => a.status === 409).every((a) => a.json().message === 'Username already exists'));
    const { n } = (await stack.identity.db('users').whereRaw('lower(username::text) = ?', [username]).count({ n: '*' }).first()) as { n: string };
    assert.equal(Number(n), 1);
  });

  it('when one account is created N times at once, exactly one wins and one row exists', async () => {
    const user = await stack.userWith(['STANDARD_USER']);
    const answers = await all(() =>
      stack.call('POST', '/v1/accounts/create', { bearer: user.accessToken, body: { userId: user.id, type: 'INDIVIDUAL', subscriptionPlan: 'NONE' } }),
    );
    assert.deepEqual(tally(answers), { 201: 1, 409: N - 1 });
    assert.equal(await countRows('accounts', { user_id: user.id }), 1);
  });

  it('when one refresh token is presented N times at once, exactly one refresh succeeds', async () => {
    const user = await stack.userWith(['STANDARD_USER']);
    const answers = await all(() => stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } }));
    assert.deepEqual(tally(answers), { 200: 1, 401: N - 1 });
    // The original and exactly one successor: no second token was ever minted from the same parent.
    const sessionIds = await stack.identity.db('sessions').where({ user_id: user.id }).pluck('id');
    assert.equal(sessionIds.length, 1);
    assert.equal(await countRows('refresh_tokens', { session_id: sessionIds[0] }), 2);
  });

  it('when N wrong passwords arrive at once, exactly N failures are counted, the user is blocked, and one mail says so', async () => {
    const user = await stack.identity.createUser({ roles: ['STANDARD_USER'] });
    const mailsBefore = stack.identity.mail.received.length;
    const answers = await all(() => stack.call('POST', '/v1/auth/login', { body: { username: user.username, password: 'wrong-password-123' } }));
    assert.deepEqual(tally(answers), { 401: N });
    const row = (await stack.identity.db('users').where({ id: user.id }).first('failed_login_count', 'status')) as { failed_login_count: number; status: string };
    assert.equal(row.failed_login_count, N);
    assert.equal(row.status, 'BLOCKED');
    await new Promise((resolve) => setTimeout(resolve, 200));
    const blockMails = stack.identity.mail.received.slice(mailsBefore).filter((m) => (m.body as { to?: string }).to === user.username);
    assert.equal(blockMails.length, 1);
    // Blocked means blocked: even the right password now answers 401.
    assert.equal((await stack.call('POST', '/v1/auth/login', { body: { username: user.username, password: user.password } })).status, 401);
  });

  it('when an activation code is asked for N times at once, exactly one SMS goes out and the rest answer 429', async () => {
    const phone = uniquePhone();
    const { user, accountId } = await userWithAccount(phone);
    const smsBefore = stack.identity.sms.received.length;
    const answers = await all(() =>
      stack.call('POST', '/v1/accounts/phone-number-activation-request', { bearer: user.accessToken, body: { userId: user.id, accountId, phoneNumberActivationPageLink: PAGE } }),
    );
    assert.deepEqual(tally(answers), { 200: 1, 429: N - 1 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(stack.identity.sms.received.slice(smsBefore).filter((r) => (r.body as { to: string }).to === phone).length, 1);
  });

  it('when the right activation code is sent N times at once, exactly one activation succeeds', async () => {
    const phone = uniquePhone();
    const { user, accountId } = await userWithAccount(phone);
    const asked = await stack.call('POST', '/v1/accounts/phone-number-activation-request', {
      bearer: user.accessToken,
      body: { userId: user.id, accountId, phoneNumberActivationPageLink: PAGE },
    });
    assert.equal(asked.status, 200, asked.body.toString());
    await stack.identity.sms.waitFor(1);
    const sms = stack.identity.sms.received.filter((r) => (r.body as { to: string }).to === phone).at(-1);
    const code = /\b(\d{6})\b/.exec((sms?.body as { message: string }).message)![1]!;
    const answers = await all(() => stack.call('POST', '/v1/accounts/phone-number-activation', { bearer: user.accessToken, body: { accountId, code } }));
    assert.deepEqual(tally(answers), { 200: 1, 400: N - 1 });
    const account = (await stack.identity.db('accounts').where({ id: accountId }).first('mobile_phone_number_verified')) as { mobile_phone_number_verified: boolean };
    assert.equal(account.mobile_phone_number_verified, true);
  });

  it('when N requests share one idempotency key, exactly one reaches the service', async () => {
    const idempotencyKey = newIdempotencyKey();
    const username = `idem-race-${Date.now()}@example.com`;
    const answers = await all(() =>
      stack.call('POST', '/v1/users/create', {
        bearer: admin.accessToken,
        idempotencyKey,
        body: { username, firstName: 'I', lastName: 'K', locale: 'en_US', timezone: 'UTC', roles: ['GUEST'], status: 'ACTIVE' },
      }),
    );
    assert.deepEqual(tally(answers), { 201: 1, 409: N - 1 });
    assert.ok(answers.filter((a) => a.status === 409).every((a) => a.json().message === 'Duplicate request detected (X-Idempotency-Key)'));
  });
});
