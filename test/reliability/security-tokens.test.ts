import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type ServerHandle, listen } from '@platform/service-kit';
import { type IdentityHarness, startIdentity } from '../../services/identity/test/support/identity-harness.ts';
import { claimsOf, forgeJwt, headerOf } from './support/forge-jwt.ts';
import { type LoggedInUser, type Stack, startStack } from './support/stack.ts';
import { abba, describeComparison, toldApart } from './support/timing.ts';

/** The headers two answers may differ in without telling anything: per-request ids and clocks. */
function comparableHeaders(headers: IncomingHttpHeaders): Record<string, unknown> {
  // `RateLimit` counts down the client key's quota with every answer, whoever the user (its policy stays compared).
  const { 'x-request-id': _id, date: _date, 'content-length': _length, ratelimit: _quota, ...rest } = headers;
  return rest;
}

describe('tokens and enumeration: no oracle, no forged token accepted', function () {
  this.timeout(120_000);
  let stack: Stack;
  let user: LoggedInUser;

  before(async () => {
    stack = await startStack();
    user = await stack.userWith(['STANDARD_USER']);
  });
  after(async () => {
    await stack?.close();
  });

  describe('forged and stale access tokens', () => {
    const forgeries = (): Array<[string, string]> => {
      const key = stack.identity.signingKey;
      const header = headerOf(user.accessToken);
      const claims = claimsOf(user.accessToken);
      const now = Math.floor(Date.now() / 1000);
      const stranger = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
      const [h, p] = user.accessToken.split('.');
      return [
        ['alg none', forgeJwt({ ...header, alg: 'none' }, claims, { none: true })],
        ['alg none with ADMIN', forgeJwt({ alg: 'none', typ: 'JWT' }, { ...claims, roles: ['ADMIN'] }, { none: true })],
        ['HS256 keyed with the public key', forgeJwt({ ...header, alg: 'HS256' }, claims, { hs256: Buffer.from(key.publicKey.export({ type: 'spki', format: 'pem' })) })],
        ['unknown kid', forgeJwt({ ...header, kid: 'not-a-known-kid' }, claims, { es256: key.privateKey })],
        ['no kid', forgeJwt({ alg: 'ES256', typ: 'JWT' }, claims, { es256: key.privateKey })],
        ['the real kid, a stranger\'s key', forgeJwt(header, { ...claims, roles: ['ADMIN'] }, { es256: stranger })],
        ['expired', forgeJwt(header, { ...claims, iat: now - 3600, exp: now - 600 }, { es256: key.privateKey })],
        ['other audience', forgeJwt(header, { ...claims, aud: 'urn:someone-else:api' }, { es256: key.privateKey })],
        ['other issuer', forgeJwt(header, { ...claims, iss: 'urn:evil:identity' }, { es256: key.privateKey })],
        ['claims missing sid', forgeJwt(header, { ...claims, sid: undefined }, { es256: key.privateKey })],
        ['payload swapped under the original signature', `${h}.${Buffer.from(JSON.stringify({ ...claims, roles: ['ADMIN'] })).toString('base64url')}.${user.accessToken.split('.')[2]}`],
        ['header and payload only', `${h}.${p}`],
      ];
    };

    it('when the token is genuine, every check passes (control)', async () => {
      assert.equal((await stack.call('GET', `/v1/accounts/${user.id}`, { bearer: user.accessToken })).status, 404, 'a user without an account');
      assert.equal((await fetch(`${stack.riskUrl}/v1/weather-stations/get-cities`, { headers: { authorization: `Bearer ${user.accessToken}` } })).status, 200);
    });

    it('when a forged or stale token is presented, the gateway, identity and risk (called directly) all answer 401 Bad Credentials', async () => {
      for (const [name, token] of forgeries()) {
        const viaGateway = await stack.call('GET', `/v1/accounts/${user.id}`, { bearer: token });
        assert.equal(viaGateway.status, 401, `${name} via gateway: ${viaGateway.body.toString()}`);
        assert.equal(viaGateway.json().message, 'Bad Credentials', name);
        const identityDirect = await fetch(`${stack.identityUrl}/v1/accounts/${user.id}`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(identityDirect.status, 401, `${name} at identity`);
        const riskDirect = await fetch(`${stack.riskUrl}/v1/weather-stations/get-cities`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(riskDirect.status, 401, `${name} at risk`);
        // Logout verifies the token it is given in its body: a forged one must not end anybody's session.
        if (name !== 'expired') assert.equal((await stack.call('POST', '/v1/auth/logout', { body: { jwtToken: token } })).status, 401, `${name} at logout`);
      }
      assert.equal((await stack.call('GET', `/v1/users/unblock/${user.id}`, { bearer: user.accessToken })).status, 403, 'the user is still no ADMIN');
    });
  });

  describe('login enumeration', () => {
    it('when the user is unknown, the password wrong, or the user blocked or inactive, the answers are identical but for time and id', async () => {
      const blocked = await stack.identity.createUser({ status: 'BLOCKED' });
      const inactive = await stack.identity.createUser({ status: 'INACTIVE' });
      const known = await stack.identity.createUser();
      const attempts = [
        { username: `nobody-${Date.now()}@example.com`, password: 'whatever-123' },
        { username: known.username, password: 'wrong-password-123' },
        { username: blocked.username, password: blocked.password },
        { username: inactive.username, password: inactive.password },
      ];
      const answers = [];
      for (const body of attempts) answers.push(await stack.call('POST', '/v1/auth/login', { body }));
      const shapes = answers.map((a) => ({ status: a.status, headers: comparableHeaders(a.headers), body: { ...a.json(), timestamp: undefined } }));
      for (const shape of shapes.slice(1)) assert.deepEqual(shape, shapes[0]);
      assert.equal(shapes[0]!.status, 401);
    });

    it('when a password reset is asked for a known or an unknown user, both answer 202 with no body', async () => {
      const known = await stack.identity.createUser();
      const answers = [];
      for (const username of [known.username, `nobody-${Date.now()}@example.com`]) {
        answers.push(await stack.call('POST', '/v1/users/password-reset-request', { body: { username } }));
      }
      assert.deepEqual(answers.map((a) => [a.status, a.body.length, comparableHeaders(a.headers)]), Array(2).fill([202, 0, comparableHeaders(answers[0]!.headers)]));
    });
  });

  describe('login timing (bcrypt at its production cost)', () => {
    let identity: IdentityHarness;
    let server: ServerHandle;

    before(async () => {
      identity = await startIdentity({ BCRYPT_COST: '10', AUTH_MAX_FAILED_LOGINS: '100', LOGIN_FAILURES_PER_MIN: '100000' });
      server = await listen(identity.app, 0);
    });
    after(async () => {
      await server?.close(1000);
      await identity?.close();
    });

    it('when the user is unknown, the answer time is within 10 % of a wrong password\'s', async () => {
      const known = await identity.createUser();
      const timed = async (username: string) => {
        const started = performance.now();
        const res = await fetch(`${server.url}/v1/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username, password: 'wrong-password-123' }),
        });
        await res.arrayBuffer();
        assert.equal(res.status, 401);
        return performance.now() - started;
      };
      for (let i = 0; i < 3; i++) await Promise.all([timed(`warm-${i}@example.com`), timed(known.username)]);
      // a: an unknown user, b: a known user's wrong password. Sampled a then b in a fixed order and compared
      // by plain medians, a load spike once fell on the b's and failed this; compared only within ABBA blocks,
      // it moves a few pairs. An unknown user who skipped the hash would answer in a few ms against bcrypt's
      // ~80: shorter by 90 % and in every pair.
      const { answer } = await abba(16, async (which) => ({ answer: await timed(which === 'a' ? `nobody-${randomUUID()}@example.com` : known.username) }));
      assert.ok(!toldApart(answer, 0.1), `${describeComparison(answer)} (a: an unknown user, b: a wrong password; bound 10 %)`);
    });
  });
});
