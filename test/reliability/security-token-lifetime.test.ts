import assert from 'node:assert/strict';
import { TOKEN_CLOCK_TOLERANCE_S } from '@platform/auth';
import { claimsOf } from './support/forge-jwt.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';

/** Access tokens live a minute here: long enough to refresh, short enough to watch one expire. */
const ACCESS_TOKEN_TTL_S = 60;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const expOf = (token: string): number => claimsOf(token).exp as number;

/**
 * How the three verifiers answer one access token: the gateway (a station lookup, bearer checked there
 * and at risk), identity called directly (its own verifier) and risk called directly (its own verifier).
 */
async function answersTo(stack: Stack, token: string): Promise<{ gateway: number; identity: number; risk: number }> {
  const bearer = { authorization: `Bearer ${token}` };
  const [gateway, identity, risk] = await Promise.all([
    stack.call('GET', '/v1/weather-stations/get-cities', { bearer: token }).then((res) => res.status),
    fetch(`${stack.identityUrl}/v1/auth/sessions`, { headers: bearer }).then(async (res) => (await res.arrayBuffer(), res.status)),
    fetch(`${stack.riskUrl}/v1/weather-stations/get-cities`, { headers: bearer }).then(async (res) => (await res.arrayBuffer(), res.status)),
  ]);
  return { gateway, identity, risk };
}

/**
 * Asks every verifier about `token` twice a second until its `exp` plus the clock tolerance plus two
 * seconds has passed, and returns every answer that was not 401. A 503 (the verifier failed closed: a Redis
 * command that timed out on a machine loaded by the tests running beside this one) refuses the token too,
 * but says nothing of it: that verifier is asked again, up to three times 200 ms apart, and its last answer
 * counts (one that stays 503 is returned).
 */
async function acceptedUntilPastExpiry(stack: Stack, token: string): Promise<string[]> {
  const accepted: string[] = [];
  const end = (expOf(token) + TOKEN_CLOCK_TOLERANCE_S + 2) * 1000;
  while (Date.now() < end) {
    const answers = await answersTo(stack, token);
    for (let again = 0; again < 3 && Object.values(answers).includes(503); again += 1) {
      await sleep(200);
      const next = await answersTo(stack, token);
      for (const verifier of ['gateway', 'identity', 'risk'] as const) if (answers[verifier] === 503) answers[verifier] = next[verifier];
    }
    for (const [verifier, status] of Object.entries(answers)) {
      if (status !== 401) accepted.push(`${verifier} ${status} at exp${Date.now() / 1000 - expOf(token) >= 0 ? '+' : ''}${(Date.now() / 1000 - expOf(token)).toFixed(1)}s`);
    }
    await sleep(500);
  }
  return accepted;
}

/** Refreshes `user`'s session once a second, `times` times, and returns the newest pair: a token under a second old. */
async function refreshEverySecond(stack: Stack, user: LoggedInUser, times: number): Promise<LoggedInUser> {
  let current = user;
  for (let i = 0; i < times; i++) {
    await sleep(1000);
    const res = await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: current.refreshToken } });
    assert.equal(res.status, 200, res.body.toString());
    const { accessToken, refreshToken } = res.json() as { accessToken: string; refreshToken: string };
    current = { ...current, accessToken, refreshToken };
  }
  return current;
}

describe('security: a revoked or outlived access token stays refused to the very end of its life', function () {
  this.timeout(180_000);
  let stack: Stack;
  let admin: LoggedInUser;

  before(async () => {
    stack = await startStack({ env: { ACCESS_TOKEN_TTL_S: String(ACCESS_TOKEN_TTL_S) } });
    admin = await stack.userWith(['ADMIN']);
  });
  after(async () => {
    await stack?.close();
  });

  it('a session refreshed every second, then logged out, ended, blocked or demoted: its newest token is refused by the gateway, identity and risk across its expiry', async () => {
    // Four users at once, so the whole test waits out one token lifetime, not four.
    const revocations: Record<string, (user: LoggedInUser) => Promise<number>> = {
      logout: async (user) => (await stack.call('POST', '/v1/auth/logout', { body: { jwtToken: user.accessToken } })).status,
      'session ended by its owner': async (user) =>
        (await stack.call('DELETE', `/v1/auth/sessions/${String(claimsOf(user.accessToken).sid)}`, { bearer: user.accessToken })).status,
      'blocked by an ADMIN': async (user) =>
        (await stack.call('PATCH', '/v1/users/update', { bearer: admin.accessToken, body: { userId: user.id, status: 'BLOCKED' } })).status,
      'demoted by an ADMIN': async (user) =>
        (await stack.call('PATCH', '/v1/users/update', { bearer: admin.accessToken, body: { userId: user.id, roles: ['STANDARD_USER'] } })).status,
    };
    const outcomes = await Promise.all(
      Object.entries(revocations).map(async ([how, revoke]) => {
        const user = await refreshEverySecond(stack, await stack.userWith(how === 'demoted by an ADMIN' ? ['ADMIN'] : ['STANDARD_USER']), 3);
        assert.deepEqual(await answersTo(stack, user.accessToken), { gateway: 200, identity: 200, risk: 200 }, `${how}: the token works before`);
        const status = await revoke(user);
        assert.ok(status === 200 || status === 204, `${how}: answered ${status}`);
        assert.ok(expOf(user.accessToken) - Date.now() / 1000 > ACCESS_TOKEN_TTL_S - 5, `${how}: the token is fresh`);
        return [how, await acceptedUntilPastExpiry(stack, user.accessToken)] as const;
      }),
    );
    for (const [how, accepted] of outcomes) assert.deepEqual(accepted, [], `${how}: the revoked token was accepted again`);
  });

  it('an access token never outlives its session: its exp is capped at the end of the absolute lifetime, and it is refused from then on', async () => {
    const user = await stack.userWith(['STANDARD_USER']);
    const sid = String(claimsOf(user.accessToken).sid);
    // The session began so long ago that its absolute lifetime (SESSION_MAX_LIFETIME_S) ends in 3 s.
    const maxLifetimeS = stack.identity.config.SESSION_MAX_LIFETIME_S;
    const createdAt = new Date(Date.now() - (maxLifetimeS - 3) * 1000);
    await stack.identity.db('sessions').where({ id: sid }).update({ created_at: createdAt });
    const res = await stack.call('POST', '/v1/auth/refresh', { body: { refreshToken: user.refreshToken } });
    assert.equal(res.status, 200, res.body.toString());
    const { accessToken } = res.json() as { accessToken: string };
    const sessionEnds = Math.floor(createdAt.getTime() / 1000) + maxLifetimeS;
    assert.ok(expOf(accessToken) <= sessionEnds, `exp ${expOf(accessToken)} is past the session's end ${sessionEnds}`);
    assert.deepEqual(await answersTo(stack, accessToken), { gateway: 200, identity: 200, risk: 200 }, 'the token works while the session lives');
    while (Date.now() / 1000 < sessionEnds + TOKEN_CLOCK_TOLERANCE_S) await sleep(250);
    assert.deepEqual(await answersTo(stack, accessToken), { gateway: 401, identity: 401, risk: 401 }, 'the token is refused once the session is over');
  });
});
