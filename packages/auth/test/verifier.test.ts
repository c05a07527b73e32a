import assert from 'node:assert/strict';
import { type KeyObject, createHmac, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { HttpError, ServiceUnavailableError, UnauthorizedError } from '@platform/errors';
import { createLogger } from '@platform/service-kit';
import { type TestRedis, createTestRedis, unreachableRedis } from '@platform/service-kit/testing';
import jwt, { type Algorithm } from 'jsonwebtoken';
import { type RevocationReader, type RevocationWriter, createRevocationReader, createRevocationWriter } from '../src/revocations/index.ts';
import { staticKeySource } from '../src/key-source.ts';
import { TOKEN_CLOCK_TOLERANCE_S, isAccepted, revocationExpiry } from '../src/token-lifetime.ts';
import type { TokenVerifier, TokenVerifierOptions } from '../src/verifier.ts';
import { REVOCATIONS_RESTORING_MESSAGE, createTokenVerifier } from '../src/verifier.ts';
import { ALL_BUCKETS, type TestIssuer, createTestIssuer, freshEnvironment, ledgerKey, revocationBucket, sessionKey, tokenKey } from '../src/testing/index.ts';

const now = (): number => Math.floor(Date.now() / 1000);
/** A logger that says nothing. */
const silent = createLogger({ service: 'test', level: 'silent' });
/** A record of ended sessions with none in it. */
async function* nothingEnded(): AsyncIterable<never[]> {}
const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Claims a valid token of `issuer` carries; tests override one at a time. */
function claimsOf(issuer: TestIssuer, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    sub: randomUUID(),
    username: 'someone@example.com',
    roles: ['STANDARD_USER'],
    sid: randomUUID(),
    jti: randomUUID(),
    iss: issuer.issuer,
    aud: issuer.audience,
    iat: now(),
    exp: now() + 900,
    ...overrides,
  };
}

/** A token signed by any key, with any claims: for what createTestIssuer().sign cannot make. */
function signWith(key: KeyObject, algorithm: Algorithm, kid: string | undefined, claims: Record<string, unknown>): string {
  return jwt.sign(claims, key, kid === undefined ? { algorithm } : { algorithm, keyid: kid });
}

function verifierFor(issuer: TestIssuer, extra: Partial<TokenVerifierOptions> = {}): TokenVerifier {
  const publicKeys = new Map([[issuer.kid, publicKeyOf(issuer)]]);
  return createTokenVerifier({ keys: staticKeySource(publicKeys), issuer: issuer.issuer, audience: issuer.audience, ...extra });
}

/** The public half of the issuer's key, as it publishes it. */
function publicKeyOf(issuer: TestIssuer): KeyObject {
  return createPublicKey(issuer.privateKey);
}

/** The verification failed with exactly the one 401 every bad token gets. */
async function assertBadCredentials(promise: Promise<unknown>): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof UnauthorizedError, `expected UnauthorizedError, got ${String(err)}`);
    assert.equal(err.status, 401);
    assert.equal(err.message, 'Bad Credentials');
    return true;
  });
}



describe('createTokenVerifier', () => {
  const issuer = createTestIssuer();
  const verifier = verifierFor(issuer);

  describe('a valid token', () => {
    it('when the token is valid, resolves the principal of its claims', async () => {
      const sub = randomUUID();
      const sid = randomUUID();
      const jti = randomUUID();
      const exp = now() + 600;
      const iat = now();
      const token = signWith(issuer.privateKey, 'ES256', issuer.kid, claimsOf(issuer, { sub, sid, jti, exp, iat, username: 'ada@example.com', roles: ['ADMIN', 'POWER_USER'] }));
      const principal = await verifier.verify(token);
      assert.deepEqual(principal, {
        userId: sub,
        username: 'ada@example.com',
        roles: ['ADMIN', 'POWER_USER'],
        sessionId: sid,
        tokenId: jti,
        expiresAt: exp,
        issuedAt: iat,
        aal: 1,
        secondFactorRequired: false,
      });
    });

    it('when the token is bound to a client key (cnf.kid, CONTRACT.md part 16), the principal names it; a cnf naming no key is refused', async () => {
      assert.equal((await verifier.verify(issuer.sign({ cnf: { kid: 'mobile-app' } }))).clientKeyId, 'mobile-app');
      assert.equal('clientKeyId' in (await verifier.verify(issuer.sign())), false);
      for (const cnf of [{}, { kid: '' }, { kid: 1 }, null, 'mobile-app', { jkt: 'x' }]) {
        await assert.rejects(verifier.verify(issuer.sign({ cnf })), (err: Error & { status?: number }) => err.status === 401, JSON.stringify(cnf));
      }
    });

    it('when the token has an empty role list, resolves a principal without roles', async () => {
      const principal = await verifier.verify(issuer.sign({ roles: [] }));
      assert.deepEqual(principal.roles, []);
    });

    it('when an RSA 2048 key signs with RS256, resolves the principal', async () => {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const rsaVerifier = createTokenVerifier({
        keys: staticKeySource(new Map([['rsa-1', publicKey]])),
        issuer: issuer.issuer,
        audience: issuer.audience,
      });
      const jti = randomUUID();
      const principal = await rsaVerifier.verify(signWith(privateKey, 'RS256', 'rsa-1', claimsOf(issuer, { jti })));
      assert.equal(principal.tokenId, jti);
    });
  });

  describe('expiry', () => {
    it('when the token expired beyond the clock tolerance, rejects with 401', async () => {
      await assertBadCredentials(verifier.verify(issuer.sign({ expiresInS: -60 })));
    });

    it('when the token expired within the clock tolerance, resolves the principal', async () => {
      const jti = randomUUID();
      const principal = await verifier.verify(signWith(issuer.privateKey, 'ES256', issuer.kid, claimsOf(issuer, { jti, exp: now() - TOKEN_CLOCK_TOLERANCE_S + 2 })));
      assert.equal(principal.tokenId, jti);
    });

    it('when the token expired exactly the clock tolerance ago, rejects with 401', async () => {
      await assertBadCredentials(verifier.verify(signWith(issuer.privateKey, 'ES256', issuer.kid, claimsOf(issuer, { exp: now() - TOKEN_CLOCK_TOLERANCE_S }))));
    });

    it('when allowExpired is set, resolves the principal of an expired token', async () => {
      const jti = randomUUID();
      const principal = await verifier.verify(issuer.sign({ jti, expiresInS: -3600 }), { allowExpired: true });
      assert.equal(principal.tokenId, jti);
      assert.ok(principal.expiresAt < now());
    });

    it('when allowExpired is set but the expired token is signed by another key, rejects with 401', async () => {
      const other = createTestIssuer(issuer.issuer, issuer.audience);
      const forged = signWith(other.privateKey, 'ES256', issuer.kid, claimsOf(issuer, { exp: now() - 3600 }));
      await assertBadCredentials(verifier.verify(forged, { allowExpired: true }));
    });
  });

  describe('remembered tokens (verified once, then accepted without a signature check)', () => {
    it('when the issuer withdraws the key, rejects a token verified with it before', async () => {
      const keys = new Map([[issuer.kid, publicKeyOf(issuer)]]);
      const remembering = createTokenVerifier({ keys: staticKeySource(keys), issuer: issuer.issuer, audience: issuer.audience });
      const token = issuer.sign({});
      await remembering.verify(token);
      await remembering.verify(token);
      keys.delete(issuer.kid);
      await assertBadCredentials(remembering.verify(token));
    });

    it('when a token verified before reaches its exp and the clock tolerance, rejects it', async () => {
      // Expired already, but within the tolerance for one or two more seconds (one alone failed when the first
      // verify, on a busy machine, came after the next second began): remembered, then past it.
      const exp = now() - TOKEN_CLOCK_TOLERANCE_S + 2;
      const token = signWith(issuer.privateKey, 'ES256', issuer.kid, claimsOf(issuer, { exp }));
      await verifier.verify(token);
      while (now() < exp + TOKEN_CLOCK_TOLERANCE_S) await new Promise((resolve) => setTimeout(resolve, 50));
      await assertBadCredentials(verifier.verify(token));
    });

    it('when an expired token was accepted with allowExpired, still rejects it without', async () => {
      const token = issuer.sign({ expiresInS: -3600 });
      await verifier.verify(token, { allowExpired: true });
      await assertBadCredentials(verifier.verify(token));
    });
  });

  describe('signature and key choice', () => {
    it('when the token is signed by a different key under the same kid, rejects with 401', async () => {
      const other = createTestIssuer(issuer.issuer, issuer.audience);
      await assertBadCredentials(verifier.verify(signWith(other.privateKey, 'ES256', issuer.kid, claimsOf(issuer))));
    });

    it('when the kid is unknown, rejects with 401', async () => {
      await assertBadCredentials(verifier.verify(signWith(issuer.privateKey, 'ES256', 'no-such-kid', claimsOf(issuer))));
    });

    it('when the header has no kid, rejects with 401', async () => {
      await assertBadCredentials(verifier.verify(signWith(issuer.privateKey, 'ES256', undefined, claimsOf(issuer))));
    });

    it('when the header says alg none with the real kid and the signature is empty, rejects with 401', async () => {
      const token = `${b64url({ alg: 'none', typ: 'JWT', kid: issuer.kid })}.${b64url(claimsOf(issuer))}.`;
      await assertBadCredentials(verifier.verify(token));
    });

    it('when the token is HS256 with the public key PEM as the HMAC secret, rejects with 401', async () => {
      const pem = publicKeyOf(issuer).export({ format: 'pem', type: 'spki' });
      const signingInput = `${b64url({ alg: 'HS256', typ: 'JWT', kid: issuer.kid })}.${b64url(claimsOf(issuer))}`;
      const signature = createHmac('sha256', pem).update(signingInput).digest('base64url');
      await assertBadCredentials(verifier.verify(`${signingInput}.${signature}`));
    });

    it('when the payload is altered after signing, rejects with 401', async () => {
      const [header, , signature] = issuer.sign({ roles: ['STANDARD_USER'] }).split('.');
      const tampered = `${header}.${b64url(claimsOf(issuer, { roles: ['ADMIN'] }))}.${signature}`;
      await assertBadCredentials(verifier.verify(tampered));
    });

    it('when the key is EC P-384, rejects an ES384 token with 401', async () => {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' });
      const p384Verifier = createTokenVerifier({
        keys: staticKeySource(new Map([['p384', publicKey]])),
        issuer: issuer.issuer,
        audience: issuer.audience,
      });
      await assertBadCredentials(p384Verifier.verify(signWith(privateKey, 'ES384', 'p384', claimsOf(issuer))));
    });

    it('when the key is RSA of 1024 bits, rejects its RS256 token with 401 (RSA keys verify from 2048 bits on, as they sign)', async () => {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
      const weakVerifier = createTokenVerifier({
        keys: staticKeySource(new Map([['rsa-1024', publicKey]])),
        issuer: issuer.issuer,
        audience: issuer.audience,
      });
      // jsonwebtoken signs with a key this small only when told to: a forger would not ask.
      const token = jwt.sign(claimsOf(issuer), privateKey, { algorithm: 'RS256', keyid: 'rsa-1024', allowInsecureKeySizes: true });
      await assertBadCredentials(weakVerifier.verify(token));
    });

    it('when the RSA key verifies a token that says ES256, rejects with 401', async () => {
      const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const rsaVerifier = createTokenVerifier({
        keys: staticKeySource(new Map([[issuer.kid, publicKey]])),
        issuer: issuer.issuer,
        audience: issuer.audience,
      });
      await assertBadCredentials(rsaVerifier.verify(issuer.sign()));
    });
  });

  describe('malformed tokens', () => {
    for (const [name, token] of [
      ['an empty string', ''],
      ['a word', 'garbage'],
      ['two segments', 'a.b'],
      ['a typ JWT header with a payload that is not JSON', `${b64url({ alg: 'ES256', typ: 'JWT', kid: 'k' })}.${Buffer.from('not json').toString('base64url')}.c2ln`],
      ['a payload that is a JSON string', `${b64url({ alg: 'ES256', kid: 'k' })}.${b64url('just text')}.c2ln`],
      ['a header that is not JSON', `${Buffer.from('{nope').toString('base64url')}.${b64url({})}.c2ln`],
    ] as const) {
      it(`when the token is ${name}, rejects with 401`, async () => {
        await assertBadCredentials(verifier.verify(token));
      });
    }
  });

  describe('claims', () => {
    it('when iss is another issuer, rejects with 401', async () => {
      await assertBadCredentials(verifier.verify(issuer.sign({ iss: 'urn:test:someone-else' })));
    });

    it('when aud is another audience, rejects with 401', async () => {
      await assertBadCredentials(verifier.verify(issuer.sign({ aud: 'urn:test:other-api' })));
    });

    const broken: Array<[string, Record<string, unknown>]> = [
      ['there is no sid', { sid: undefined }],
      ['there is no sub', { sub: undefined }],
      ['there is no username', { username: undefined }],
      ['there is no jti', { jti: undefined }],
      ['there is no exp', { exp: undefined }],
      ['roles is not an array', { roles: 'ADMIN' }],
      ['roles names an unknown role', { roles: ['STANDARD_USER', 'ROOT'] }],
      ['sub is a number', { sub: 42 }],
    ];
    for (const [name, overrides] of broken) {
      it(`when ${name}, rejects with 401`, async () => {
        const claims = Object.fromEntries(Object.entries(claimsOf(issuer, overrides)).filter(([, v]) => v !== undefined));
        await assertBadCredentials(verifier.verify(signWith(issuer.privateKey, 'ES256', issuer.kid, claims)));
      });
    }
  });

  describe('revocations', () => {
    let testRedis: TestRedis;
    let writer: RevocationWriter;
    let reader: RevocationReader;

    before(async () => {
      testRedis = await createTestRedis('auth_verifier');
      await freshEnvironment(testRedis.redis);
      writer = createRevocationWriter(testRedis.redis, { logger: silent, intervalMs: 60_000, accessTokenTtlS: 900, endedSince: nothingEnded });
      reader = createRevocationReader(testRedis.redis, { logger: silent });
    });

    after(async () => {
      await reader.stop();
      await writer.stop();
      await testRedis.close();
    });

    it('when the token was revoked, rejects with 401', async () => {
      const guarded = verifierFor(issuer, { revocations: reader });
      const [jti, sid] = [randomUUID(), randomUUID()];
      const token = issuer.sign({ jti, sid });
      assert.equal((await guarded.verify(token)).tokenId, jti);
      await writer.revoke({ tokenId: jti, sessionId: sid }, now() + 900);
      await assertBadCredentials(guarded.verify(token));
    });

    it('when the token was revoked and ignoreRevocation is set, resolves the principal', async () => {
      const guarded = verifierFor(issuer, { revocations: reader });
      const [jti, sid] = [randomUUID(), randomUUID()];
      const token = issuer.sign({ jti, sid });
      await writer.revoke({ tokenId: jti, sessionId: sid }, now() + 900);
      assert.equal((await guarded.verify(token, { ignoreRevocation: true })).tokenId, jti);
    });

    it('when another token was revoked, resolves the principal', async () => {
      await writer.revoke({ tokenId: randomUUID(), sessionId: randomUUID() }, now() + 900);
      const jti = randomUUID();
      assert.equal((await verifierFor(issuer, { revocations: reader }).verify(issuer.sign({ jti }))).tokenId, jti);
    });

    it('when a token is revoked, keeps the Redis key until the token expires, and twice the clock tolerance after', async () => {
      const token = { tokenId: randomUUID(), sessionId: randomUUID() };
      const exp = now() + 120;
      await writer.revoke(token, exp);
      assert.equal(await testRedis.redis.expiretime(tokenKey(token)), exp + 2 * TOKEN_CLOCK_TOLERANCE_S);
      assert.equal(await testRedis.redis.get(tokenKey(token)), '1');
    });

    it('when the expiry has a fraction of a second, revokes from the next whole second on', async () => {
      const token = { tokenId: randomUUID(), sessionId: randomUUID() };
      const exp = now() + 60;
      await writer.revoke(token, exp + 0.5);
      assert.equal(await reader.isRevoked(token), true);
      assert.equal(await testRedis.redis.expiretime(tokenKey(token)), exp + 1 + 2 * TOKEN_CLOCK_TOLERANCE_S);
    });

    it('when the token expired but a verifier may still accept it, revoke writes the key', async () => {
      const token = { tokenId: randomUUID(), sessionId: randomUUID() };
      await writer.revoke(token, now() - TOKEN_CLOCK_TOLERANCE_S + 1);
      assert.equal(await reader.isRevoked(token), true);
    });

    it('when no verifier accepts the token any more (even by a clock the tolerance behind), revoke writes nothing', async () => {
      const token = { tokenId: randomUUID(), sessionId: randomUUID() };
      await writer.revoke(token, now() - 2 * TOKEN_CLOCK_TOLERANCE_S);
      assert.equal(await testRedis.redis.exists(tokenKey(token)), 0);
      assert.equal(await reader.isRevoked(token), false);
    });

    it('a revocation outlives the last moment any verifier accepts its token, by a verifier clock up to the tolerance behind Redis', async () => {
      // The rule the verifiers accept by and the rule revocations are kept by, held against each other:
      // if the tolerance, the acceptance rule or the revocation's lifetime changes alone, this fails.
      const base = now();
      for (const exp of [base, base + 0.25, base + 0.5, base + 0.999, base + 900]) {
        const lastAcceptedMs = (Math.ceil(exp) + TOKEN_CLOCK_TOLERANCE_S) * 1000 - 1;
        assert.equal(isAccepted(exp, lastAcceptedMs), true, `a verifier accepts a token of exp ${exp} until just before exp + tolerance`);
        assert.equal(isAccepted(exp, lastAcceptedMs + 1 + 1000), false);
        // Redis's clock may be up to the tolerance ahead of the verifier's.
        assert.ok(revocationExpiry(exp) * 1000 > lastAcceptedMs + TOKEN_CLOCK_TOLERANCE_S * 1000, `revocation of exp ${exp} ends too early`);
      }
      // And the verifier itself accepts by that rule: a token within the tolerance passes, one past it does not.
      await verifier.verify(signWith(issuer.privateKey, 'ES256', issuer.kid, claimsOf(issuer, { exp: now() - TOKEN_CLOCK_TOLERANCE_S + 1 })));
      await assertBadCredentials(verifier.verify(signWith(issuer.privateKey, 'ES256', issuer.kid, claimsOf(issuer, { exp: now() - TOKEN_CLOCK_TOLERANCE_S }))));
    });

    it('names the key after the jti, in the hash tag of its session\'s bucket, beside that bucket\'s ledger', () => {
      const token = { tokenId: 'abc-123', sessionId: 'sid-1' };
      const bucket = revocationBucket('sid-1');
      assert.equal(tokenKey(token), `auth:{rv:${bucket}}:token:abc-123`);
      assert.equal(sessionKey('sid-1'), `auth:{rv:${bucket}}:session:sid-1`);
      assert.equal(ledgerKey(bucket), `auth:{rv:${bucket}}:mirror`);
    });

    it('spreads sessions over every bucket, none with much more than its share', () => {
      const counts = new Array<number>(ALL_BUCKETS.length).fill(0);
      for (let i = 0; i < 64_000; i += 1) counts[revocationBucket(randomUUID())]! += 1;
      assert.ok(Math.min(...counts) > 800 && Math.max(...counts) < 1200, `bucket sizes ${Math.min(...counts)}…${Math.max(...counts)}`);
    });

    it('when the session of a token was ended, rejects that token and every other of the session, until the given time', async () => {
      const guarded = verifierFor(issuer, { revocations: reader });
      const sid = randomUUID();
      const first = issuer.sign({ sid });
      const second = issuer.sign({ sid });
      const elsewhere = issuer.sign();
      const latestExp = now() + 900;
      await writer.endSessions([sid], latestExp);
      await assert.rejects(guarded.verify(first), { status: 401 });
      await assert.rejects(guarded.verify(second), { status: 401 });
      assert.equal((await guarded.verify(elsewhere)).tokenId.length > 0, true, 'other sessions are untouched');
      assert.equal(await testRedis.redis.expiretime(sessionKey(sid)), latestExp + 2 * TOKEN_CLOCK_TOLERANCE_S);
      const past = randomUUID();
      await writer.endSessions([past], now() - 2 * TOKEN_CLOCK_TOLERANCE_S);
      assert.equal(await testRedis.redis.exists(sessionKey(past)), 0, 'a past time writes nothing');
    });

    it('when the token\'s bucket is closed (Redis lost it, not re-seeded yet), rejects with 503 and the restoring message', async () => {
      const own = await createTestRedis('auth_verifier_lost');
      const ownReader = createRevocationReader(own.redis, { logger: silent });
      try {
        await assert.rejects(verifierFor(issuer, { revocations: ownReader }).verify(issuer.sign()), (err: { status?: number; message?: string }) => err.status === 503 && err.message === REVOCATIONS_RESTORING_MESSAGE);
      } finally {
        await ownReader.stop();
        await own.close();
      }
    });

    describe('when Redis is unreachable', () => {
      const redis = unreachableRedis();
      const unreachable = createRevocationReader(redis, { logger: silent });
      const guarded = verifierFor(issuer, { revocations: unreachable });

      after(async () => {
        await unreachable.stop();
        redis.disconnect();
      });

      it('when the revocations cannot be asked, rejects with 503 (fails closed)', async () => {
        await assert.rejects(guarded.verify(issuer.sign()), (err: unknown) => {
          assert.ok(err instanceof ServiceUnavailableError, `expected ServiceUnavailableError, got ${String(err)}`);
          assert.ok(err instanceof HttpError);
          assert.equal(err.status, 503);
          assert.ok(err.cause instanceof Error, 'the Redis fault is kept as the cause for the log');
          return true;
        });
      });

      it('when ignoreRevocation is set, resolves without asking Redis', async () => {
        const jti = randomUUID();
        assert.equal((await guarded.verify(issuer.sign({ jti }), { ignoreRevocation: true })).tokenId, jti);
      });

      it('when the token is bad, rejects with 401 before asking Redis', async () => {
        await assertBadCredentials(guarded.verify(issuer.sign({ expiresInS: -600 })));
      });
    });
  });
});
