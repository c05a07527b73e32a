import assert from 'node:assert/strict';
import { createHmac, createPrivateKey } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { createTokenVerifier, jwksKeySource } from '@platform/auth';
import { generateSigningKeyPem } from '../src/auth/signing-key.ts';
import { type IdentityHarness, startIdentity } from './support/identity-harness.ts';

describe('access tokens', () => {
  let identity: IdentityHarness;
  let admin: { accessToken: string };
  let claims: jwt.JwtPayload;

  before(async () => {
    identity = await startIdentity();
    admin = await identity.login(await identity.createUser({ roles: ['ADMIN'] }));
    claims = jwt.decode(admin.accessToken) as jwt.JwtPayload;
  });
  after(async () => {
    await identity.close();
  });

  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const guarded = (token: string) =>
    request(identity.app).get('/v1/users/unblock/8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e').set('Authorization', `Bearer ${token}`);

  it('a genuine ADMIN token passes the guard (the route answers 404 for the unknown user)', async () => {
    assert.equal((await guarded(admin.accessToken)).status, 404);
  });

  const forgeries: Array<[string, () => string]> = [
    [
      'expired',
      () => jwt.sign({ ...claims, iat: claims.iat! - 3600, exp: claims.iat! - 60 }, identity.signingKey.privateKey, { algorithm: 'ES256', keyid: identity.signingKey.kid }),
    ],
    [
      'signed by another key under our kid',
      () => jwt.sign(claims, createPrivateKey(generateSigningKeyPem()), { algorithm: 'ES256', keyid: identity.signingKey.kid }),
    ],
    ['with an unknown kid', () => jwt.sign(claims, identity.signingKey.privateKey, { algorithm: 'ES256', keyid: 'someone-elses-key' })],
    ['without a kid', () => jwt.sign(claims, identity.signingKey.privateKey, { algorithm: 'ES256' })],
    ['with alg none', () => `${b64({ alg: 'none', typ: 'JWT', kid: identity.signingKey.kid })}.${b64(claims)}.`],
    [
      'HS256 keyed with our public key',
      () => {
        // Algorithm confusion: the published public key used as an HMAC secret.
        const unsigned = `${b64({ alg: 'HS256', typ: 'JWT', kid: identity.signingKey.kid })}.${b64(claims)}`;
        const secret = identity.signingKey.publicKey.export({ format: 'pem', type: 'spki' });
        return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
      },
    ],
    [
      'for another audience',
      () => jwt.sign({ ...claims, aud: 'urn:elsewhere' }, identity.signingKey.privateKey, { algorithm: 'ES256', keyid: identity.signingKey.kid }),
    ],
    ['with a changed payload', () => `${admin.accessToken.split('.')[0]}.${b64({ ...claims, roles: ['ADMIN', 'POWER_USER'] })}.${admin.accessToken.split('.')[2]}`],
  ];

  for (const [name, make] of forgeries) {
    it(`when the token is ${name}, answers 401 Bad Credentials`, async () => {
      const res = await guarded(make());
      assert.equal(res.status, 401);
      const { timestamp: _t, ...body } = res.body;
      assert.deepEqual(body, { status: 401, error: 'Unauthorized', message: 'Bad Credentials', path: '/v1/users/unblock/8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e' });
    });
  }

  describe('GET /.well-known/jwks.json', () => {
    it('publishes the public key under the kid that tokens carry, and nothing private', async () => {
      const res = await request(identity.app).get('/.well-known/jwks.json');
      assert.equal(res.status, 200);
      assert.equal(res.body.keys.length, 1);
      const [key] = res.body.keys;
      assert.equal(key.kid, identity.signingKey.kid);
      assert.equal(key.kid, jwt.decode(admin.accessToken, { complete: true })?.header.kid);
      assert.deepEqual([key.kty, key.crv, key.alg, key.use], ['EC', 'P-256', 'ES256', 'sig']);
      assert.equal(key.d, undefined);
    });

    it('lets a verifier elsewhere (packages/auth over HTTP) check tokens issued by login', async () => {
      const server = identity.app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const verifier = createTokenVerifier({
          keys: jwksKeySource({ url: `http://127.0.0.1:${port}/.well-known/jwks.json` }),
          issuer: identity.config.TOKEN_ISSUER,
          audience: identity.config.JWT_AUDIENCE,
        });
        const principal = await verifier.verify(admin.accessToken);
        assert.equal(principal.userId, claims.sub);
        assert.deepEqual(principal.roles, ['ADMIN']);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });
  });
});
