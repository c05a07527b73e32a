import assert from 'node:assert/strict';
import request from 'supertest';
import { blacklistToken } from '@platform/auth/testing';
import { createTestIssuer } from '@platform/auth/testing';
import { type ForwardedFacts, assertForwarding } from '@platform/service-kit';
import { type RiskTestContext, startRiskTestContext } from './support/risk-test-context.ts';

const OPERATIONS = [
  ['post', '/v1/weather-stations/by/city-district'],
  ['get', '/v1/weather-stations/by/id/17128'],
  ['get', '/v1/weather-stations/get-districts-of/Ankara'],
  ['get', '/v1/weather-stations/get-cities'],
  ['get', '/v1/weather-stations/nearest?latitude=40&longitude=33'],
] as const;

describe('bearer token on the station operations', () => {
  let ctx: RiskTestContext;

  before(async () => {
    ctx = await startRiskTestContext('risk_auth');
  });
  after(async () => {
    await ctx.close();
  });

  function call(method: 'get' | 'post', path: string, authorization?: string) {
    const req = method === 'post' ? request(ctx.url).post(path).send({ city: 'Ankara', district: 'Keçiören' }) : request(ctx.url).get(path);
    return authorization === undefined ? req : req.set('Authorization', authorization);
  }

  function assertBadCredentials(res: request.Response, path: string) {
    assert.equal(res.status, 401, path);
    assert.equal(res.body.error, 'Unauthorized');
    assert.equal(res.body.message, 'Bad Credentials');
    assert.deepEqual(res.body.messages, ['Bad Credentials']);
    assert.equal(res.body.path, path);
  }

  for (const [method, path] of OPERATIONS) {
    it(`${method.toUpperCase()} ${path}: with a valid token answers 200, without one 401 Bad Credentials`, async () => {
      assert.equal((await call(method, path, ctx.auth())).status, 200);
      assertBadCredentials(await call(method, path), path);
    });
  }

  it('when the token holds any role (GUEST), answers 200', async () => {
    const res = await call('get', '/v1/weather-stations/get-cities', `Bearer ${ctx.issuer.sign({ roles: ['GUEST'] })}`);
    assert.equal(res.status, 200);
  });

  const invalid: Array<[string, () => string]> = [
    ['the header is not a bearer token', () => `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['the token is not a JWT', () => 'Bearer not-a-jwt'],
    ['the token has expired', () => `Bearer ${ctx.issuer.sign({ expiresInS: -60 })}`],
    ['the token is signed by another key', () => `Bearer ${createTestIssuer(ctx.issuer.issuer, ctx.issuer.audience).sign()}`],
    ['the token has another issuer', () => `Bearer ${ctx.issuer.sign({ iss: 'urn:someone:else' })}`],
    ['the token is for another audience', () => `Bearer ${ctx.issuer.sign({ aud: 'urn:another:api' })}`],
    ['the token was tampered with', () => `Bearer ${ctx.issuer.sign().slice(0, -4)}AAAA`],
  ];
  for (const [when, authorization] of invalid) {
    it(`when ${when}, answers 401 Bad Credentials`, async () => {
      assertBadCredentials(await call('get', '/v1/weather-stations/get-cities', authorization()), '/v1/weather-stations/get-cities');
    });
  }

  it('when the token is on the shared blacklist (logged out), answers 401 Bad Credentials', async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    const [jti, sid] = [`logout-${Date.now()}`, `session-${Date.now()}`];
    const token = `Bearer ${ctx.issuer.sign({ jti, sid, expiresInS: 600 })}`;
    assert.equal((await call('get', '/v1/weather-stations/get-cities', token)).status, 200);
    await blacklistToken(ctx.testRedis.redis, { tokenId: jti, sessionId: sid }, exp);
    assertBadCredentials(await call('get', '/v1/weather-stations/get-cities', token), '/v1/weather-stations/get-cities');
  });
  it('when the token is aal 1 of a user who must show a second factor (an ADMIN in prod), answers 403 Second factor required; at aal 2, 200', async () => {
    const refused = await call('get', '/v1/weather-stations/get-cities', `Bearer ${ctx.issuer.sign({ roles: ['ADMIN'], aal: 1, sfr: true })}`);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.message, 'Second factor required');
    assert.deepEqual(refused.body.messages, ['Second factor required']);
    assert.equal((await call('get', '/v1/weather-stations/get-cities', `Bearer ${ctx.issuer.sign({ roles: ['ADMIN'], aal: 2, sfr: true })}`)).status, 200);
  });

  describe('when the gateway vouches that it checked the token against the revocations (CONTRACT.md part 10)', () => {
    const path = '/v1/weather-stations/get-cities';
    /** A logged-out token: the gateway never vouches for one, so an answer of 200 shows risk did not read the blacklist. */
    async function revokedToken() {
      const jti = `vouched-${Date.now()}-${Math.random()}`;
      const sid = `sid-${jti}`;
      const token = `Bearer ${ctx.issuer.sign({ jti, sid, expiresInS: 600 })}`;
      await blacklistToken(ctx.testRedis.redis, { tokenId: jti, sessionId: sid }, Math.floor(Date.now() / 1000) + 600);
      return token;
    }
    const facts: ForwardedFacts = { method: 'GET', target: path, forwardedFor: '203.0.113.9', forwardedProto: 'https', clientKeyId: 'partner-1', requestId: 'gw-1' };
    const viaGateway = (authorization: string, assertion: string) =>
      request(ctx.url)
        .get(path)
        .set({ authorization, 'x-forwarded-for': facts.forwardedFor, 'x-forwarded-proto': facts.forwardedProto, 'x-client-key-id': facts.clientKeyId, 'x-request-id': 'gw-1', 'x-internal-assertion': assertion });

    it('under its v3 assertion over that Authorization header, does not read the revocations again', async () => {
      const token = await revokedToken();
      const res = await viaGateway(token, assertForwarding(ctx.config.INTERNAL_ASSERTION_KEY, { ...facts, checkedAuthorization: token }));
      assert.equal(res.status, 200);
    });

    it('under an assertion that vouches for nothing (v2), or for another Authorization header, checks the token fully', async () => {
      const token = await revokedToken();
      assertBadCredentials(await viaGateway(token, assertForwarding(ctx.config.INTERNAL_ASSERTION_KEY, facts)), path);
      const other = `Bearer ${ctx.issuer.sign()}`;
      assertBadCredentials(await viaGateway(token, assertForwarding(ctx.config.INTERNAL_ASSERTION_KEY, { ...facts, checkedAuthorization: other })), path);
      assertBadCredentials(await viaGateway(token, assertForwarding('another-internal-assertion-key-0123456789', { ...facts, checkedAuthorization: token })), path);
    });

    it('under its v3 assertion, still verifies a token itself: one signed by a key risk does not know, unsigned (alg none), expired or tampered with is 401', async () => {
      const unsigned = `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'x', username: 'x', roles: ['ADMIN'], sid: 's', jti: 'j', exp: Math.floor(Date.now() / 1000) + 600, iss: ctx.issuer.issuer, aud: ctx.issuer.audience })).toString('base64url')}.`;
      const refused = [
        `Bearer ${createTestIssuer(ctx.issuer.issuer, ctx.issuer.audience).sign()}`,
        unsigned,
        `Bearer ${ctx.issuer.sign({ expiresInS: -60 })}`,
        `Bearer ${ctx.issuer.sign().slice(0, -4)}AAAA`,
        'Bearer not-a-jwt',
      ];
      for (const authorization of refused) {
        assertBadCredentials(await viaGateway(authorization, assertForwarding(ctx.config.INTERNAL_ASSERTION_KEY, { ...facts, checkedAuthorization: authorization })), path);
      }
    });

    it('under its v3 assertion, a token it verified before is taken again, and the second factor of this route is still asked', async () => {
      const token = `Bearer ${ctx.issuer.sign()}`;
      for (let i = 0; i < 2; i += 1) assert.equal((await viaGateway(token, assertForwarding(ctx.config.INTERNAL_ASSERTION_KEY, { ...facts, checkedAuthorization: token }))).status, 200);
      const firstFactorOnly = `Bearer ${ctx.issuer.sign({ roles: ['ADMIN'], aal: 1, sfr: true })}`;
      for (let i = 0; i < 2; i += 1) {
        const res = await viaGateway(firstFactorOnly, assertForwarding(ctx.config.INTERNAL_ASSERTION_KEY, { ...facts, checkedAuthorization: firstFactorOnly }));
        assert.equal(res.status, 403);
        assert.equal(res.body.message, 'Second factor required');
      }
    });
  });
});
