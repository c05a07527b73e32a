import assert from 'node:assert/strict';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { TOKEN_CLOCK_TOLERANCE_S } from '@platform/auth';
import { tokenKey } from '@platform/auth/testing';
import { generateSigningKeyPem, signingKeyFromPem } from '../src/auth/signing-key.ts';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

describe('POST /v1/auth/logout', () => {
  let identity: IdentityHarness;

  before(async () => {
    identity = await startIdentity();
  });
  after(async () => {
    await identity.close();
  });

  const logout = (jwtToken: string) => request(identity.app).post('/v1/auth/logout').send({ jwtToken });

  it('when the token verifies, answers 200 with an empty body; the token is refused afterwards and its refresh token is dead', async () => {
    const admin = await identity.createUser({ roles: ['ADMIN'] });
    const target = await identity.createUser();
    const tokens = await identity.login(admin);
    // An ADMIN's read of another user: it needs a token the verifier accepts, and the role in it.
    const readTarget = () => request(identity.app).get(`/v1/users/${target.id}`).set('Authorization', `Bearer ${tokens.accessToken}`);
    assert.equal((await readTarget()).status, 200, 'the token works before logout');

    const res = await logout(tokens.accessToken);
    assert.equal(res.status, 200);
    assert.equal(res.text, '');

    const refused = await readTarget();
    assert.equal(refused.status, 401);
    assert.equal(refused.body.message, 'Bad Credentials');
    const refreshed = await request(identity.app).post('/v1/auth/refresh').send({ refreshToken: tokens.refreshToken });
    assert.equal(refreshed.status, 401);

    const claims = jwt.decode(tokens.accessToken) as jwt.JwtPayload;
    // Until every verifier stops accepting the token (its exp and the clock tolerance), and that tolerance again for Redis's clock.
    assert.equal(await identity.redis.expiretime(tokenKey({ tokenId: claims.jti!, sessionId: claims.sid as string })), claims.exp! + 2 * TOKEN_CLOCK_TOLERANCE_S, 'blacklist entry outlives the token');
  });

  it('when the same token logs out twice, answers 200 both times', async () => {
    const user = await identity.createUser();
    const { accessToken } = await identity.login(user);
    assert.equal((await logout(accessToken)).status, 200);
    assert.equal((await logout(accessToken)).status, 200);
  });

  it('when the token has expired, still ends its session and answers 200', async () => {
    const user = await identity.createUser();
    const { accessToken, refreshToken } = await identity.login(user);
    const claims = jwt.decode(accessToken) as jwt.JwtPayload;
    const expired = jwt.sign({ ...claims, iat: claims.iat! - 3600, exp: claims.iat! - 1800 }, identity.signingKey.privateKey, {
      algorithm: 'ES256',
      keyid: identity.signingKey.kid,
    });
    assert.equal((await logout(expired)).status, 200);
    assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken })).status, 401);
  });

  it('when the token does not verify, answers 401 Bad Credentials and ends nothing', async () => {
    const user = await identity.createUser();
    const { accessToken, refreshToken } = await identity.login(user);
    const claims = jwt.decode(accessToken) as jwt.JwtPayload;
    const stranger = await signingKeyFromPem(generateSigningKeyPem());
    const forged = jwt.sign(claims, stranger.privateKey, { algorithm: 'ES256', keyid: identity.signingKey.kid });
    for (const token of [forged, 'not-a-jwt', `${accessToken.slice(0, -4)}AAAA`]) {
      const res = await logout(token);
      assert.equal(res.status, 401, token.slice(0, 10));
      assert.equal(res.body.message, 'Bad Credentials');
    }
    assert.equal((await request(identity.app).post('/v1/auth/refresh').send({ refreshToken })).status, 200, 'the session lives on');
  });
});
