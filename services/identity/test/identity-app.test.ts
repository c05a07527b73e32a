import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { parse } from 'yaml';
import { closeRedis, createMetrics, loadConfig } from '@platform/service-kit';
import {
  type TestDatabase,
  type TestRedis,
  captureLogger,
  createTestDatabase,
  createTestRedis,
  unreachableRedis,
} from '@platform/service-kit/testing';
import { migrations } from '../migrations/index.ts';
import { OPENAPI_PATH, createApp } from '../src/app.ts';
import { type PasswordHasher, createPasswordHasher } from '../src/passwords/password-hasher.ts';
import type { RevocationWriter } from '@platform/auth';
import { type SigningKey, generateSigningKeyPem, signingKeyFromPem } from '../src/auth/signing-key.ts';
import { identityConfigSpec } from '../src/config.ts';
import { createMailer } from '../src/notifications/mailer.ts';
import { createSmsSender } from '../src/notifications/sms-sender.ts';
import { startRevocationKeeper } from './support/identity-harness.ts';

describe('identity app', () => {
  let database: TestDatabase;
  let testRedis: TestRedis;
  let hasher: PasswordHasher;
  let signingKey: SigningKey;

  before(async () => {
    signingKey = await signingKeyFromPem(generateSigningKeyPem());
    database = await createTestDatabase('identity', migrations);
    testRedis = await createTestRedis('identity');
    hasher = await createPasswordHasher({ cost: 4, threads: 1 });
  });
  after(async () => {
    await hasher.close();
    await testRedis.close();
    await database.drop();
  });

  const keepers: RevocationWriter[] = [];
  afterEach(async () => {
    for (const keeper of keepers.splice(0)) await keeper.stop();
  });

  async function build(redis = testRedis.redis) {
    const config = loadConfig(identityConfigSpec, { OPENAPI_VALIDATE_RESPONSES: 'true' });
    const log = captureLogger('identity');
    const revocations = await startRevocationKeeper(database.db, redis, config, log.logger);
    keepers.push(revocations);
    const app = createApp({
      config,
      logger: log.logger,
      db: database.db,
      redis,
      metrics: createMetrics('identity'),
      lifecycle: { draining: false },
      hasher,
      signingKey,
      previousKeys: [],
      mailer: createMailer({ provider: 'log' }, log.logger),
      sms: createSmsSender({ provider: 'log' }, log.logger),
      revocations,
    });
    return { app, log };
  }

  describe('GET /health/ready', () => {
    it('when Postgres and Redis answer, answers 200', async () => {
      const res = await request((await build()).app).get('/health/ready');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { status: 'ready', checks: { postgres: 'up', redis: 'up', revocations: 'up' } });
    });

    it('when Redis is unreachable, answers 503 naming it, and the revocation mirror it cannot check', async () => {
      const redis = unreachableRedis();
      try {
        const res = await request((await build(redis)).app).get('/health/ready');
        assert.equal(res.status, 503);
        assert.deepEqual(res.body.messages, ['redis is unreachable', 'revocations is unreachable']);
      } finally {
        await closeRedis(redis);
      }
    });
  });

  describe('an unknown path', () => {
    it('answers 404 in the error shape with X-Request-Id', async () => {
      const res = await request((await build()).app).get('/v1/nothing-here?x=1');
      assert.equal(res.status, 404);
      assert.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'message', 'path', 'status', 'timestamp']);
      assert.equal(res.body.error, 'Not Found');
      assert.equal(res.body.path, '/v1/nothing-here?x=1');
    });
  });

  describe('documented operations', () => {
    const document = parse(readFileSync(OPENAPI_PATH, 'utf8')) as { paths: Record<string, Record<string, unknown>> };

    it('the document describes every operation of SPEC.md part 4 and CONTRACT.md (parts 11, 15 and 16 included)', () => {
      const operations = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.keys(item)
          .filter((k) => ['get', 'post', 'patch', 'put', 'delete'].includes(k))
          .map((method) => `${method.toUpperCase()} ${path}`),
      );
      assert.deepEqual(operations.sort(), [
        'DELETE /v1/auth/factors/{factorId}',
        'DELETE /v1/auth/sessions',
        'DELETE /v1/auth/sessions/{sessionId}',
        'DELETE /v1/users/{userId}/factors',
        'GET /.well-known/jwks.json',
        'GET /v1/accounts/{userId}',
        'GET /v1/audit/events',
        'GET /v1/auth/factors',
        'GET /v1/auth/sessions',
        'GET /v1/users',
        'GET /v1/users/unblock/{userId}',
        'GET /v1/users/{userId}',
        'PATCH /v1/accounts/update',
        'PATCH /v1/users/update',
        'POST /v1/accounts/create',
        'POST /v1/accounts/phone-number-activation',
        'POST /v1/accounts/phone-number-activation-request',
        'POST /v1/auth/factors/totp',
        'POST /v1/auth/factors/totp/confirm',
        'POST /v1/auth/introspect',
        'POST /v1/auth/login',
        'POST /v1/auth/logout',
        'POST /v1/auth/refresh',
        'POST /v1/auth/revoke',
        'POST /v1/auth/second-factor',
        'POST /v1/users/create',
        'POST /v1/users/password-reset',
        'POST /v1/users/password-reset-request',
      ]);
    });

    it('a valid request is answered by its router (here: 401 without a token), not by the 501 fallback', async () => {
      const { app } = await build();
      const res = await request(app).get('/v1/accounts/8f14e45f-ceea-467f-a0e6-0f5b3c8a1d2e');
      assert.equal(res.status, 401);
    });
  });

  describe('request validation against openapi.yaml', () => {
    it('rejects a body breaking the schema with 400 and one message per violation', async () => {
      const res = await request((await build()).app)
        .post('/v1/users/create')
        .send({ username: 'not-an-email', firstName: 'A', lastName: 'B', locale: 'english', timezone: 'Europe/Istanbul', roles: ['KING'], status: 'ACTIVE', surprise: 1 });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, 'Bad Request');
      const messages = res.body.messages as string[];
      assert.ok(messages.length >= 4, messages.join(' | '));
      assert.ok(messages.some((m) => m.startsWith('body.username')), 'username format not reported');
      assert.ok(messages.some((m) => m.startsWith('body.locale')), 'locale pattern not reported');
      assert.ok(messages.some((m) => m.startsWith('body.roles')), 'role enum not reported');
      assert.ok(messages.some((m) => m.includes('additional properties')), 'unknown field not reported');
      assert.equal(res.body.message, messages.join('; '));
    });

    it('answers 400 for malformed JSON, 415 for a wrong Content-Type, 413 over 100 kB, 405 for a wrong method', async () => {
      const { app } = await build();
      const malformed = await request(app).post('/v1/auth/login').set('Content-Type', 'application/json').send('{"username":');
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.message, 'Request body is not valid JSON');
      const text = await request(app).post('/v1/auth/login').set('Content-Type', 'text/plain').send('username=a');
      assert.equal(text.status, 415);
      const huge = await request(app).post('/v1/auth/login').send({ username: 'a@example.com', password: 'x'.repeat(110_000) });
      assert.equal(huge.status, 413);
      assert.equal(huge.body.error, 'Payload Too Large');
      const wrongMethod = await request(app).delete('/v1/auth/login');
      assert.equal(wrongMethod.status, 405);
      assert.equal(wrongMethod.headers.allow, 'POST');
    });
  });
});
