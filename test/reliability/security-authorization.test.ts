import assert from 'node:assert/strict';
import type { Role } from '@platform/auth';
import { insertAccountIfAbsent } from '../../services/identity/src/accounts/accounts.repository.ts';
import type { TestUser } from '../../services/identity/test/support/identity-harness.ts';
import { claimsOf } from './support/forge-jwt.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';

const ROLES: readonly Role[] = ['GUEST', 'API_USER', 'STANDARD_USER', 'POWER_USER', 'EXTENDED_USER', 'ADMIN'];
/** Who calls: nobody, someone holding exactly one role, or the victim themself. */
type Caller = 'anonymous' | Role | 'self';
const CALLERS: readonly Caller[] = ['anonymous', ...ROLES, 'self'];

/** A victim of the request: a STANDARD_USER with a session, and their account unless the operation creates it. */
interface Victim {
  user: TestUser;
  accountId: string | undefined;
  /** The access token of the victim's session. */
  token: string;
}

const sessionIdOf = (token: string) => String(claimsOf(token).sid);

/** One row of the table: the request against a victim, and who may make it. */
interface Rule {
  name: string;
  allowed: readonly Caller[];
  withoutAccount?: boolean;
  /**
   * How everyone else is refused: 403, or 404 where a 403 would tell that the thing exists (another
   * user's session answers as an unknown one does).
   */
  refusedAs?: '403' | '404';
  request: (victim: Victim) => { method: string; target: string; body?: unknown };
}

const EVERY_ROLE: readonly Caller[] = [...ROLES, 'self'];
const unique = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

// CONTRACT.md part 4, operation by operation. Anything not listed as allowed must be 401 (anonymous) or 403.
const RULES: readonly Rule[] = [
  {
    name: 'create a user',
    allowed: ['ADMIN'],
    request: () => ({
      method: 'POST',
      target: '/v1/users/create',
      body: { username: `new-${unique()}@example.com`, firstName: 'N', lastName: 'U', locale: 'en_US', timezone: 'UTC', roles: ['GUEST'], status: 'ACTIVE' },
    }),
  },
  { name: 'change their name', allowed: ['self', 'POWER_USER', 'ADMIN'], request: (v) => ({ method: 'PATCH', target: '/v1/users/update', body: { userId: v.user.id, firstName: 'Changed' } }) },
  {
    name: 'change their username',
    allowed: ['self', 'POWER_USER', 'ADMIN'],
    request: (v) => ({ method: 'PATCH', target: '/v1/users/update', body: { userId: v.user.id, username: `renamed-${unique()}@example.com` } }),
  },
  { name: 'change their roles', allowed: ['ADMIN'], request: (v) => ({ method: 'PATCH', target: '/v1/users/update', body: { userId: v.user.id, roles: ['ADMIN'] } }) },
  { name: 'change their status', allowed: ['ADMIN'], request: (v) => ({ method: 'PATCH', target: '/v1/users/update', body: { userId: v.user.id, status: 'ACTIVE' } }) },
  {
    name: 'change their password',
    allowed: ['ADMIN'],
    request: (v) => ({ method: 'PATCH', target: '/v1/users/update', body: { userId: v.user.id, password: 'a-new-password-123' } }),
  },
  { name: 'unblock them', allowed: ['ADMIN'], request: (v) => ({ method: 'GET', target: `/v1/users/unblock/${v.user.id}` }) },
  {
    name: 'create their account',
    allowed: ['self', 'ADMIN'],
    withoutAccount: true,
    request: (v) => ({ method: 'POST', target: '/v1/accounts/create', body: { userId: v.user.id, type: 'INDIVIDUAL', subscriptionPlan: 'NONE' } }),
  },
  { name: 'read their account', allowed: ['self', 'ADMIN'], request: (v) => ({ method: 'GET', target: `/v1/accounts/${v.user.id}` }) },
  { name: 'update their account', allowed: ['self', 'ADMIN'], refusedAs: '404', request: (v) => ({ method: 'PATCH', target: '/v1/accounts/update', body: { accountId: v.accountId, company: 'Mine now' } }) },
  {
    name: 'send their phone an activation code',
    allowed: ['self', 'ADMIN'],
    request: (v) => ({
      method: 'POST',
      target: '/v1/accounts/phone-number-activation-request',
      body: { userId: v.user.id, accountId: v.accountId, phoneNumberActivationPageLink: 'http://localhost:3000/activate' },
    }),
  },
  { name: 'activate their phone', allowed: ['self', 'ADMIN'], refusedAs: '404', request: (v) => ({ method: 'POST', target: '/v1/accounts/phone-number-activation', body: { accountId: v.accountId, code: '000000' } }) },
  { name: 'find them by username', allowed: ['ADMIN'], request: (v) => ({ method: 'GET', target: `/v1/users?username=${encodeURIComponent(v.user.username)}` }) },
  { name: 'read them', allowed: ['self', 'ADMIN'], request: (v) => ({ method: 'GET', target: `/v1/users/${v.user.id}` }) },
  { name: 'read the audit trail about them', allowed: ['ADMIN'], request: (v) => ({ method: 'GET', target: `/v1/audit/events?subjectUserId=${v.user.id}` }) },
  { name: 'list their sessions', allowed: ['self', 'ADMIN'], request: (v) => ({ method: 'GET', target: `/v1/auth/sessions?userId=${v.user.id}` }) },
  { name: 'end one of their sessions', allowed: ['self', 'ADMIN'], refusedAs: '404', request: (v) => ({ method: 'DELETE', target: `/v1/auth/sessions/${sessionIdOf(v.token)}` }) },
  { name: 'end all their sessions', allowed: ['self', 'ADMIN'], request: (v) => ({ method: 'DELETE', target: `/v1/auth/sessions?userId=${v.user.id}` }) },
  { name: 'list cities', allowed: EVERY_ROLE, request: () => ({ method: 'GET', target: '/v1/weather-stations/get-cities' }) },
  { name: 'find a station', allowed: EVERY_ROLE, request: () => ({ method: 'GET', target: '/v1/weather-stations/by/id/17130' }) },
  { name: 'list districts', allowed: EVERY_ROLE, request: () => ({ method: 'GET', target: '/v1/weather-stations/get-districts-of/ankara' }) },
  { name: 'find nearest stations', allowed: EVERY_ROLE, request: () => ({ method: 'GET', target: '/v1/weather-stations/nearest?latitude=39.9&longitude=32.8' }) },
  {
    name: 'find stations by district',
    allowed: EVERY_ROLE,
    request: () => ({ method: 'POST', target: '/v1/weather-stations/by/city-district', body: { city: 'ankara', district: 'çankaya' } }),
  },
];

describe('authorization table: every operation × every role, against another user\'s data (BOLA, function level)', function () {
  this.timeout(120_000);
  let stack: Stack;
  const callers = new Map<Role, LoggedInUser>();

  before(async () => {
    stack = await startStack();
    for (const role of ROLES) callers.set(role, await stack.userWith([role]));
  });
  after(async () => {
    await stack?.close();
  });

  async function victimFor(rule: Rule): Promise<Victim> {
    const user = await stack.userWith(['STANDARD_USER']);
    const account = rule.withoutAccount ? undefined : await insertAccountIfAbsent(stack.identity.db, user.id, { type: 'INDIVIDUAL', mobilePhoneNumber: '+905321234567' });
    return { user, accountId: account?.id, token: user.accessToken };
  }

  for (const rule of RULES) {
    it(`${rule.name}: allowed for ${rule.allowed.join(', ')}; 401 for anonymous, ${rule.refusedAs ?? '403'} for everyone else`, async () => {
      const outcomes: string[] = [];
      for (const caller of CALLERS) {
        const victim = await victimFor(rule);
        const bearer = caller === 'anonymous' ? undefined : caller === 'self' ? victim.token : callers.get(caller)!.accessToken;
        const { method, target, body } = rule.request(victim);
        const res = await stack.call(method, target, { bearer, body });
        const refused = rule.refusedAs ?? '403';
        const expected = rule.allowed.includes(caller) ? 'allowed' : caller === 'anonymous' ? '401' : refused;
        const actual = res.status === 401 || String(res.status) === refused ? String(res.status) : res.status < 500 ? 'allowed' : `5xx ${res.status}`;
        if (actual !== expected) outcomes.push(`${caller}: expected ${expected}, got ${res.status} ${res.body.toString().slice(0, 200)}`);
      }
      assert.deepEqual(outcomes, []);
    });
  }

  describe('mass assignment', () => {
    let self: LoggedInUser;
    let accountId: string;

    before(async () => {
      self = await stack.userWith(['STANDARD_USER']);
      accountId = (await insertAccountIfAbsent(stack.identity.db, self.id, { type: 'INDIVIDUAL' }))!.id;
    });

    const attempts = (): Array<[string, string, string, unknown]> => [
      ['create a user with server-owned fields', 'POST', '/v1/users/create', { username: `m-${unique()}@example.com`, firstName: 'M', lastName: 'A', locale: 'en_US', timezone: 'UTC', roles: ['GUEST'], status: 'ACTIVE', id: '00000000-0000-4000-8000-000000000000', failedLoginCount: -100, passwordHash: 'x' }],
      ['update oneself with a failure count', 'PATCH', '/v1/users/update', { userId: self.id, failedLoginCount: 0 }],
      ['update oneself with a new id', 'PATCH', '/v1/users/update', { userId: self.id, id: '00000000-0000-4000-8000-000000000000' }],
      ['update oneself with __proto__ roles', 'PATCH', '/v1/users/update', JSON.parse(`{"userId":"${self.id}","__proto__":{"roles":["ADMIN"]}}`)],
      ['create an account pre-verified', 'POST', '/v1/accounts/create', { userId: self.id, type: 'INDIVIDUAL', subscriptionPlan: 'NONE', emailVerified: true, mobilePhoneNumberVerified: true }],
      ['give oneself a paid plan', 'PATCH', '/v1/accounts/update', { accountId, subscriptionPlan: 'PREMIUM_YEARLY' }],
      ['move the account to another user', 'PATCH', '/v1/accounts/update', { accountId, userId: callers.get('ADMIN')!.id }],
      ['verify one\'s own phone by decree', 'PATCH', '/v1/accounts/update', { accountId, mobilePhoneNumberVerified: true }],
      ['log in with roles', 'POST', '/v1/auth/login', { username: self.username, password: self.password, roles: ['ADMIN'] }],
    ];

    it('when a request sets a field the caller may not set, answers 400 and changes nothing', async () => {
      for (const [name, method, target, body] of attempts()) {
        const before = await stack.snapshot();
        const bearer = target.startsWith('/v1/users/create') ? callers.get('ADMIN')!.accessToken : self.accessToken;
        const res = await stack.call(method, target, { bearer, body });
        assert.equal(res.status, 400, `${name}: ${res.body.toString()}`);
        assert.equal(await stack.snapshot(), before, `${name} changed the database`);
      }
    });

    it('when users raise their own roles or status, answers 403 and changes nothing', async () => {
      for (const body of [{ userId: self.id, roles: ['ADMIN'] }, { userId: self.id, status: 'ACTIVE' }, { userId: self.id, password: 'my-own-new-password' }]) {
        const before = await stack.snapshot();
        const res = await stack.call('PATCH', '/v1/users/update', { bearer: self.accessToken, body });
        assert.equal(res.status, 403, `${JSON.stringify(body)}: ${res.body.toString()}`);
        assert.equal(await stack.snapshot(), before);
      }
    });
  });
});
