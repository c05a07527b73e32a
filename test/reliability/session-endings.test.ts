import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { claimsOf } from './support/forge-jwt.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';

/**
 * Every path that ends a session, one by one: the session's access token is refused by risk (called
 * directly, its own verifier and the shared blacklist) the moment the request that ended it has answered,
 * not when the token expires. A use case that ended sessions in Postgres and forgot to publish them
 * would fail here.
 */
describe('every path that ends a session: its access token is refused at risk at once', function () {
  this.timeout(120_000);
  let stack: Stack;
  let admin: LoggedInUser;

  before(async () => {
    stack = await startStack();
    admin = await stack.userWith(['ADMIN']);
  });
  after(async () => {
    await stack?.close();
  });

  /** Risk's answer to a station lookup with `token`, called directly (no gateway in between). */
  const atRisk = async (token: string): Promise<number> => {
    const res = await fetch(`${stack.riskUrl}/v1/weather-stations/get-cities`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    return res.status;
  };
  const expectStatus = (res: { status: number; body: Buffer }, ...statuses: number[]): void => {
    assert.ok(statuses.includes(res.status), `answered ${res.status}: ${res.body.toString().slice(0, 200)}`);
  };

  /** Each path: what it does to `user`, and the access tokens that must be refused afterwards. */
  const paths: Record<string, (user: LoggedInUser) => Promise<string[]>> = {
    logout: async (user) => {
      expectStatus(await stack.call('POST', '/v1/auth/logout', { body: { jwtToken: user.accessToken } }), 200);
      return [user.accessToken];
    },
    'ending one session': async (user) => {
      expectStatus(await stack.call('DELETE', `/v1/auth/sessions/${String(claimsOf(user.accessToken).sid)}`, { bearer: user.accessToken }), 204);
      return [user.accessToken];
    },
    'ending all sessions': async (user) => {
      expectStatus(await stack.call('DELETE', '/v1/auth/sessions', { bearer: user.accessToken }), 204);
      return [user.accessToken];
    },
    'a rotated refresh token presented again': async (user) => {
      const refreshed = await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } });
      expectStatus(refreshed, 200);
      expectStatus(await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } }), 401);
      return [user.accessToken, (refreshed.json() as { accessToken: string }).accessToken];
    },
    'a refresh past the session\'s absolute lifetime': async (user) => {
      const sid = String(claimsOf(user.accessToken).sid);
      const maxLifetimeS = stack.identity.config.SESSION_MAX_LIFETIME_S;
      await stack.identity.db('sessions').where({ id: sid }).update({ created_at: new Date(Date.now() - (maxLifetimeS + 60) * 1000) });
      expectStatus(await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } }), 401);
      return [user.accessToken];
    },
    'a refresh by a user no longer active': async (user) => {
      // Behind the API's back, which would end the sessions itself ('a change of status'): so that refresh's
      // own check ends it, as after a change it did not see (a race, an operator's SQL).
      await stack.identity.db('users').where({ id: user.id }).update({ status: 'INACTIVE' });
      expectStatus(await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } }), 401);
      return [user.accessToken];
    },
    'the block after repeated failed logins': async (user) => {
      for (let i = 0; i <= stack.identity.config.AUTH_MAX_FAILED_LOGINS; i++) {
        expectStatus(await stack.call('POST', '/v1/auth/login', { body: { username: user.username, password: 'not-the-password-1' } }), 401);
      }
      return [user.accessToken];
    },
    'a change of roles': async (user) => {
      expectStatus(await stack.call('PATCH', '/v1/users/update', { bearer: admin.accessToken, body: { userId: user.id, roles: ['GUEST'] } }), 200);
      return [user.accessToken];
    },
    'a change of status': async (user) => {
      expectStatus(await stack.call('PATCH', '/v1/users/update', { bearer: admin.accessToken, body: { userId: user.id, status: 'INACTIVE' } }), 200);
      return [user.accessToken];
    },
    'a new password set by an ADMIN': async (user) => {
      expectStatus(await stack.call('PATCH', '/v1/users/update', { bearer: admin.accessToken, body: { userId: user.id, password: `a-rare-passphrase-${randomUUID()}` } }), 200);
      return [user.accessToken];
    },
    'a rename': async (user) => {
      const body = { userId: user.id, username: `renamed-${randomUUID()}@example.com`, currentPassword: user.password };
      expectStatus(await stack.call('PATCH', '/v1/users/update', { bearer: user.accessToken, body }), 200);
      return [user.accessToken];
    },
    'a password reset': async (user) => {
      const ticket = await stack.call('POST', '/v1/users/password-reset-request', { bearer: admin.accessToken, body: { username: user.username } });
      expectStatus(ticket, 201);
      const body = { userId: user.id, token: (ticket.json() as { token: string }).token, newPassword: `a-rare-passphrase-${randomUUID()}` };
      expectStatus(await stack.call('POST', '/v1/users/password-reset', { body }), 200);
      return [user.accessToken];
    },
  };

  for (const [path, end] of Object.entries(paths)) {
    it(`${path}: the session's access tokens are refused by risk as soon as it answered`, async () => {
      const user = await stack.userWith(['STANDARD_USER']);
      assert.equal(await atRisk(user.accessToken), 200, 'the token works before');
      const tokens = await end(user);
      for (const token of tokens) assert.equal(await atRisk(token), 401, 'risk still accepts a token of the ended session');
      const live = await stack.identity.db('sessions').where({ id: String(claimsOf(user.accessToken).sid) }).whereNull('revoked_at').first('id');
      assert.equal(live, undefined, 'the session has ended in Postgres too');
    });
  }
});
