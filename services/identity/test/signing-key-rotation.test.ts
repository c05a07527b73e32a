import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { ConfigError, loadConfig } from '@platform/service-kit';
import { createAccessTokenIssuer } from '../src/auth/access-tokens.ts';
import { type SigningKey, generateSigningKeyPem, signingKeyFromPem } from '../src/auth/signing-key.ts';
import { identityConfigSpec } from '../src/config.ts';
import { type IdentityHarness, type TestUser, startIdentity } from './support/identity-harness.ts';

const publicPem = (key: SigningKey) => key.publicKey.export({ format: 'pem', type: 'spki' }).toString();

describe('signing-key rotation: JWT_PREVIOUS_PUBLIC_KEYS', () => {
  const current = generateSigningKeyPem();
  let retired: SigningKey;
  let rsaRetired: SigningKey;
  let identity: IdentityHarness;
  let user: TestUser;

  before(async () => {
    retired = await signingKeyFromPem(generateSigningKeyPem());
    rsaRetired = await signingKeyFromPem(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
    // The current key is listed among the previous ones too: an operator's slip must not publish it twice.
    const previous = `${publicPem(retired)}\n${publicPem(rsaRetired)}${publicPem(await signingKeyFromPem(current))}`;
    identity = await startIdentity({ JWT_PRIVATE_KEY: current, JWT_PREVIOUS_PUBLIC_KEYS: previous });
    user = await identity.createUser();
    await identity.db('accounts').insert({ user_id: user.id, type: 'INDIVIDUAL' });
  });
  after(async () => {
    await identity.close();
  });

  /** An access token of `user`'s as the identity service signed it with `key` before the rotation. */
  const tokenSignedBy = (key: SigningKey) =>
    createAccessTokenIssuer({ key, issuer: identity.config.TOKEN_ISSUER, audience: identity.config.JWT_AUDIENCE, ttlS: 900, sessionMaxLifetimeS: 86_400 }).issue({
      userId: user.id,
      username: user.username,
      roles: user.roles,
      sessionId: '5d7f3b8e-2c4a-4e8f-9b1d-0a6c3e5f7b9d',
      sessionCreatedAt: new Date(),
      aal: 1,
      secondFactorRequired: false,
    }).token;
  const readAccount = (token: string) => request(identity.app).get(`/v1/accounts/${user.id}`).set('Authorization', `Bearer ${token}`);

  it('GET /.well-known/jwks.json publishes the signing key first, then each previous key once, cacheable for 5 minutes', async () => {
    const res = await request(identity.app).get('/.well-known/jwks.json');
    assert.equal(res.status, 200);
    assert.equal(res.headers['cache-control'], 'public, max-age=300');
    assert.deepEqual(
      res.body.keys.map((k: { kid: string; alg: string }) => [k.kid, k.alg]),
      [
        [identity.signingKey.kid, 'ES256'],
        [retired.kid, 'ES256'],
        [rsaRetired.kid, 'RS256'],
      ],
    );
    for (const key of res.body.keys) assert.equal(key.d, undefined);
  });

  describe('GET /.well-known/jwks.json re-validated with If-None-Match (verifiers check it every few seconds)', () => {
    const jwks = (ifNoneMatch?: string) => {
      const call = request(identity.app).get('/.well-known/jwks.json');
      return ifNoneMatch === undefined ? call : call.set('If-None-Match', ifNoneMatch);
    };

    it('answers 304 without a body to the ETag it serves (strong, weak, or in a list) and to *, keeping Cache-Control', async () => {
      const first = await jwks();
      const etag = first.headers.etag as string;
      assert.match(etag, /^"[A-Za-z0-9_-]{43}"$/);
      for (const condition of [etag, `W/${etag}`, `"stale", ${etag}`, '*']) {
        const res = await jwks(condition);
        assert.equal(res.status, 304, condition);
        assert.equal(res.text, '', condition);
        assert.equal(res.headers.etag, etag, condition);
        assert.equal(res.headers['cache-control'], 'public, max-age=300', condition);
      }
    });

    it('answers 200 with the key set to another ETag', async () => {
      const res = await jwks('"some-other-key-set"');
      assert.equal(res.status, 200);
      assert.equal(res.body.keys.length, 3);
    });

    it('serves the same ETag from every process with the same keys, and another once a key is removed', async () => {
      const etag = (await jwks()).headers.etag as string;
      try {
        await identity.restart({});
        assert.equal((await jwks()).headers.etag, etag, 'a replica with the same keys');
        assert.equal((await jwks(etag)).status, 304);
        await identity.restart({ JWT_PREVIOUS_PUBLIC_KEYS: publicPem(retired) });
        const res = await jwks(etag);
        assert.equal(res.status, 200, 'a key set without the RSA key is another key set');
        assert.notEqual(res.headers.etag, etag);
        assert.deepEqual(
          res.body.keys.map((k: { kid: string }) => k.kid),
          [identity.signingKey.kid, retired.kid],
        );
      } finally {
        await identity.restart({});
      }
    });
  });

  it('new tokens are signed with JWT_PRIVATE_KEY', async () => {
    const { accessToken } = await identity.login(user);
    assert.equal(jwt.decode(accessToken, { complete: true })?.header.kid, (await signingKeyFromPem(current)).kid);
  });

  it('a token signed with a previous key (EC or RSA) is still accepted', async () => {
    assert.equal((await readAccount(tokenSignedBy(retired))).status, 200);
    assert.equal((await readAccount(tokenSignedBy(rsaRetired))).status, 200);
  });

  it('a token signed with a key that is listed nowhere answers 401 Bad Credentials', async () => {
    const res = await readAccount(tokenSignedBy(await signingKeyFromPem(generateSigningKeyPem())));
    assert.equal(res.status, 401);
    assert.equal(res.body.message, 'Bad Credentials');
  });

  describe('the configuration', () => {
    const problemsOf = (value: string): string[] => {
      try {
        loadConfig(identityConfigSpec, { JWT_PREVIOUS_PUBLIC_KEYS: value });
        return [];
      } catch (err) {
        if (err instanceof ConfigError) return [...err.problems];
        throw err;
      }
    };

    it('takes nothing, one key, or several concatenated', () => {
      assert.deepEqual(loadConfig(identityConfigSpec, {}).JWT_PREVIOUS_PUBLIC_KEYS, []);
      assert.equal(loadConfig(identityConfigSpec, { JWT_PREVIOUS_PUBLIC_KEYS: `${publicPem(retired)}${publicPem(rsaRetired)}` }).JWT_PREVIOUS_PUBLIC_KEYS.length, 2);
    });

    it('refuses a private key, without repeating it', () => {
      const [problem, ...more] = problemsOf(generateSigningKeyPem());
      assert.deepEqual(more, []);
      assert.match(problem!, /^JWT_PREVIOUS_PUBLIC_KEYS block 1 is a PRIVATE KEY; only PEM public keys/);
      assert.doesNotMatch(problem!, /MIG|MIH/);
    });

    it('refuses keys that cannot sign access tokens, unreadable blocks and stray text', () => {
      const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ format: 'pem', type: 'spki' }).toString();
      assert.match(problemsOf(`${publicPem(retired)}${p384}`)[0]!, /block 2: must be a P-256 EC key or an RSA key of at least 2048 bits/);
      assert.match(problemsOf('-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----')[0]!, /block 1: is not a readable public key/);
      assert.match(problemsOf(`${publicPem(retired)} and the old one`)[0]!, /holds text outside PEM blocks/);
    });
  });
});
