import assert from 'node:assert/strict';
import { createPublicKey, randomUUID } from 'node:crypto';
import { errorHandler, notFoundHandler } from '@platform/errors';
import { type TestRedis, createTestRedis, unreachableRedis } from '@platform/service-kit/testing';
import express, { type Express } from 'express';
import request from 'supertest';
import { type RevocationReader, createRevocationReader } from '../src/revocations/index.ts';
import { createLogger } from '@platform/service-kit';
import { bearerAuth, bearerTokenOf, principalOf, requireAnyRole } from '../src/express.ts';
import { staticKeySource } from '../src/key-source.ts';
import { createTokenVerifier } from '../src/verifier.ts';
import { type TestIssuer, blacklistToken, createTestIssuer, freshEnvironment } from '../src/testing/index.ts';

const silent = createLogger({ service: 'test', level: 'silent' });

/** An app as a deployable mounts the package: an ADMIN route, an open route, the shared error handling. */
function createApp(issuer: TestIssuer, revocations?: RevocationReader): Express {
  const verifier = createTokenVerifier({
    keys: staticKeySource(new Map([[issuer.kid, createPublicKey(issuer.privateKey)]])),
    issuer: issuer.issuer,
    audience: issuer.audience,
    ...(revocations === undefined ? {} : { revocations }),
  });
  const app = express();
  app.use(express.json());
  app.get('/admin/things', bearerAuth(verifier), requireAnyRole('ADMIN'), (req, res) => {
    res.json(principalOf(req));
  });
  app.get('/any/things', bearerAuth(verifier), (req, res) => {
    res.json(principalOf(req));
  });
  app.get('/open', (req, res) => {
    res.json(principalOf(req));
  });
  app.use(notFoundHandler);
  app.use(errorHandler());
  return app;
}

/** The body without its timestamp, which is checked to be a fresh ISO date. */
function withoutTimestamp(res: request.Response): Record<string, unknown> {
  const { timestamp, ...rest } = res.body as Record<string, unknown>;
  assert.equal(typeof timestamp, 'string');
  assert.equal(new Date(timestamp as string).toISOString(), timestamp);
  assert.ok(Math.abs(Date.now() - Date.parse(timestamp as string)) < 5000);
  return rest;
}

const badCredentials = (path: string) => ({ status: 401, error: 'Unauthorized', message: 'Bad Credentials', path });

describe('bearerAuth', () => {
  const issuer = createTestIssuer();
  let testRedis: TestRedis;
  let reader: RevocationReader;
  let app: Express;

  before(async () => {
    testRedis = await createTestRedis('auth_express');
    await freshEnvironment(testRedis.redis);
    reader = createRevocationReader(testRedis.redis, { logger: silent });
    app = createApp(issuer, reader);
  });

  after(async () => {
    await reader.stop();
    await testRedis.close();
  });

  it('when there is no Authorization header, answers 401 Bad Credentials', async () => {
    const res = await request(app).get('/admin/things?x=1');
    assert.equal(res.status, 401);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.deepEqual(withoutTimestamp(res), badCredentials('/admin/things?x=1'));
  });

  it('when the scheme is Basic, answers 401 Bad Credentials', async () => {
    const res = await request(app).get('/admin/things').set('Authorization', 'Basic x');
    assert.equal(res.status, 401);
    assert.deepEqual(withoutTimestamp(res), badCredentials('/admin/things'));
  });

  it('when the token is garbage, answers 401 Bad Credentials', async () => {
    const res = await request(app).get('/admin/things').set('Authorization', 'Bearer not-a-token');
    assert.equal(res.status, 401);
    assert.deepEqual(withoutTimestamp(res), badCredentials('/admin/things'));
  });

  it('when the scheme is written in lower case, accepts the token', async () => {
    const userId = randomUUID();
    const res = await request(app).get('/any/things').set('Authorization', `bearer ${issuer.sign({ sub: userId })}`);
    assert.equal(res.status, 200);
    assert.equal((res.body as { userId: string }).userId, userId);
  });

  it('when a STANDARD_USER calls an ADMIN route, answers 403 Forbidden', async () => {
    const res = await request(app).get('/admin/things').set('Authorization', `Bearer ${issuer.sign({ roles: ['STANDARD_USER'] })}`);
    assert.equal(res.status, 403);
    assert.deepEqual(withoutTimestamp(res), {
      status: 403,
      error: 'Forbidden',
      message: 'You are not allowed to perform this operation',
      path: '/admin/things',
    });
  });

  it('when an ADMIN calls an ADMIN route, answers 200 and the route sees the principal', async () => {
    const sub = randomUUID();
    const sid = randomUUID();
    const jti = randomUUID();
    const token = issuer.sign({ sub, sid, jti, username: 'admin@example.com', roles: ['ADMIN'], expiresInS: 600 });
    const res = await request(app).get('/admin/things').set('Authorization', `Bearer ${token}`);
    assert.equal(res.status, 200);
    const body = res.body as Record<string, unknown>;
    assert.deepEqual(body, {
      userId: sub,
      username: 'admin@example.com',
      roles: ['ADMIN'],
      sessionId: sid,
      tokenId: jti,
      expiresAt: body.expiresAt,
      issuedAt: body.issuedAt,
      // A token of earlier versions (no `aal`, no `sfr`): the password alone, no second factor asked of it.
      aal: 1,
      secondFactorRequired: false,
    });
    assert.ok(Math.abs((body.expiresAt as number) - (Math.floor(Date.now() / 1000) + 600)) <= 2);
  });

  it('when a route is not behind bearerAuth, principalOf answers 401', async () => {
    const res = await request(app).get('/open').set('Authorization', `Bearer ${issuer.sign({ roles: ['ADMIN'] })}`);
    assert.equal(res.status, 401);
    assert.deepEqual(withoutTimestamp(res), badCredentials('/open'));
  });

  it('when the token is missing, expired, forged or revoked, answers the same 401 body', async () => {
    const forger = createTestIssuer(issuer.issuer, issuer.audience);
    const forged = forger.sign({ roles: ['ADMIN'] }).split('.');
    const genuineHeader = issuer.sign().split('.')[0];
    const [revokedJti, revokedSid] = [randomUUID(), randomUUID()];
    const revoked = issuer.sign({ jti: revokedJti, sid: revokedSid, roles: ['ADMIN'] });
    await blacklistToken(testRedis.redis, { tokenId: revokedJti, sessionId: revokedSid }, Math.floor(Date.now() / 1000) + 900);

    const answers = await Promise.all([
      request(app).get('/admin/things'),
      request(app).get('/admin/things').set('Authorization', `Bearer ${issuer.sign({ roles: ['ADMIN'], expiresInS: -600 })}`),
      request(app).get('/admin/things').set('Authorization', `Bearer ${genuineHeader}.${forged[1]}.${forged[2]}`),
      request(app).get('/admin/things').set('Authorization', `Bearer ${revoked}`),
    ]);
    const [missing, ...others] = answers.map((res) => {
      assert.equal(res.status, 401);
      return { body: withoutTimestamp(res), contentType: res.headers['content-type'] };
    });
    assert.deepEqual(missing!.body, badCredentials('/admin/things'));
    for (const other of others) assert.deepEqual(other, missing);
  });

  it('when the blacklist store is down, answers 503 rather than letting the token through', async () => {
    const redis = unreachableRedis();
    const unreachable = createRevocationReader(redis, { logger: silent });
    try {
      const res = await request(createApp(issuer, unreachable))
        .get('/admin/things')
        .set('Authorization', `Bearer ${issuer.sign({ roles: ['ADMIN'] })}`);
      assert.equal(res.status, 503);
      assert.deepEqual(withoutTimestamp(res), {
        status: 503,
        error: 'Service Unavailable',
        message: 'Service temporarily unavailable',
        path: '/admin/things',
      });
    } finally {
      await unreachable.stop();
      redis.disconnect();
    }
  });
});

describe('bearerTokenOf', () => {
  it('answers the token after Bearer in any letter case', () => {
    assert.equal(bearerTokenOf('Bearer abc.def.ghi'), 'abc.def.ghi');
    assert.equal(bearerTokenOf('bearer abc.def.ghi'), 'abc.def.ghi');
    assert.equal(bearerTokenOf('BEARER abc.def.ghi'), 'abc.def.ghi');
  });

  it('tolerates extra spaces around the token and base64 padding', () => {
    assert.equal(bearerTokenOf('Bearer   abc.def  '), 'abc.def');
    assert.equal(bearerTokenOf('Bearer abc=='), 'abc==');
  });

  for (const header of [undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'Bearerabc', 'Bearer a b', 'Bearer a,b', 'Token abc']) {
    it(`when the header is ${JSON.stringify(header)}, answers undefined`, () => {
      assert.equal(bearerTokenOf(header), undefined);
    });
  }
});
