import { randomUUID } from 'node:crypto';
import type { RevocationWriter, Role } from '@platform/auth';
import { freshEnvironment } from '@platform/auth/testing';
import type { Express } from 'express';
import request from 'supertest';
import { type Logger, type Redis, assertForwarding, createMetrics, loadConfig } from '@platform/service-kit';
import type { Knex } from '@platform/service-kit/database';
import { type CapturedLogger, captureLogger, createTestDatabase, createTestRedis } from '@platform/service-kit/testing';
import { migrations } from '../../migrations/index.ts';
import { createApp } from '../../src/app.ts';
import { type PasswordHasher, createPasswordHasher } from '../../src/passwords/password-hasher.ts';
import { startRevocations } from '../../src/sessions/revocations.ts';
import { type SigningKey, generateSigningKeyPem, signingKeyFromPem, verificationKeyFromPem } from '../../src/auth/signing-key.ts';
import { type IdentityConfig, identityConfigSpec } from '../../src/config.ts';
import { createMailer } from '../../src/notifications/mailer.ts';
import { createSmsSender } from '../../src/notifications/sms-sender.ts';
import { insertUserIfAbsent } from '../../src/user-records/users.repository.ts';
import type { UserRecord } from '../../src/user-records/user.ts';
import { type CaptureServer, startCaptureServer } from './capture-server.ts';

/** A user a test made, with the password it was given. */
export interface TestUser extends UserRecord {
  password: string;
}

/** The real identity app on a fresh database, real Redis and a capturing mail provider. */
export interface IdentityHarness {
  app: Express;
  config: IdentityConfig;
  db: Knex;
  redis: Redis;
  log: CapturedLogger;
  mail: CaptureServer;
  /** The SMS provider stub. */
  sms: CaptureServer;
  signingKey: SigningKey;
  hasher: PasswordHasher;
  /** Stores a user directly (fixtures); defaults: ACTIVE STANDARD_USER with a random e-mail. */
  createUser(fields?: TestUserFields): Promise<TestUser>;
  /** Logs the user in through the API and returns the authentication result. */
  login(user: { username: string; password: string }): Promise<{ accessToken: string; refreshToken: string }>;
  /**
   * Replaces app, config and signing key with those of a restarted process whose environment also has
   * `env` (a key rotation, say): same database, Redis and providers.
   */
  restart(env: Record<string, string>): Promise<void>;
  /** An access token of a new ACTIVE user with these roles. */
  tokenFor(roles: Role[]): Promise<string>;
  /**
   * The headers with which the gateway forwards a request from `origin`, vouched for by its assertion
   * (CONTRACT.md part 10): what identity believes of the caller's address and client key.
   */
  viaGateway(method: string, target: string, origin: { address: string; clientKeyId?: string }): Record<string, string>;
  /** The revocation mirror keeper of the harness (CONTRACT.md part 13). */
  revocations: RevocationWriter;
  /** Deletes every key of the harness's Redis prefix, as a Redis that lost its data (CONTRACT.md part 13). */
  loseRedisData(): Promise<void>;
  /** The harness's Redis keys now; the function returned rolls Redis back to them, as a lagging replica promoted. */
  snapshotRedisData(): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/**
 * Starts identity's revocations as its composition root does, and waits for their first look at Redis.
 * The harness's fresh key prefix is a new environment, not a Redis that lost its data (`freshEnvironment`).
 * Tests of a loss make one (`loseRedisData`); on a Redis that a test made unreachable there is nothing to
 * mark, and the buckets stay unchecked, as identity would leave them.
 */
export async function startRevocationKeeper(db: Knex, redis: Redis, config: IdentityConfig, logger: Logger): Promise<RevocationWriter> {
  await freshEnvironment(redis).catch(() => undefined);
  const keeper = startRevocations({
    db,
    redis,
    accessTokenTtlS: config.ACCESS_TOKEN_TTL_S,
    intervalMs: config.REVOCATION_MIRROR_CHECK_MS,
    logger,
  });
  await keeper.checkNow();
  return keeper;
}

/** The fields a fixture user may be given; the rest are defaults. */
export type TestUserFields = Partial<Omit<TestUser, 'id' | 'passwordHash' | 'failedLoginCount'>>;

/** Stores a fixture user straight into identity's database `db`: ACTIVE STANDARD_USER with a random e-mail unless `fields` say otherwise. */
export async function insertTestUser(db: Knex, hasher: PasswordHasher, fields: TestUserFields = {}): Promise<TestUser> {
  const password = fields.password ?? `pw-${randomUUID()}`;
  const user = await insertUserIfAbsent(db, {
    username: fields.username ?? uniqueUsername(),
    passwordHash: await hasher.hash(password),
    firstName: fields.firstName ?? 'Ada',
    midName: fields.midName ?? null,
    lastName: fields.lastName ?? 'Lovelace',
    locale: fields.locale ?? 'en_US',
    timezone: fields.timezone ?? 'Europe/Istanbul',
    roles: fields.roles ?? ['STANDARD_USER'],
    status: fields.status ?? 'ACTIVE',
  });
  if (user === undefined) throw new Error('fixture user already exists');
  return { ...user, password };
}

/**
 * The settings identity runs with in tests, whatever starts it (this harness, the reliability stack's
 * process): bcrypt at cost 4 (config, not a code path), mail and SMS to capture servers.
 */
export function identityTestEnv(providers: { mail: CaptureServer; sms: CaptureServer }): Record<string, string> {
  return {
    BCRYPT_COST: '4',
    PASSWORD_HASH_THREADS: '1',
    MAIL_PROVIDER: 'http',
    MAIL_HTTP_URL: providers.mail.url,
    SMS_PROVIDER: 'http',
    SMS_HTTP_URL: providers.sms.url,
    SMS_HTTP_TOKEN: 'sms-provider-token',
    NOTIFY_HTTP_TIMEOUT_MS: '1000',
  };
}

/** A username nobody else in the run has. */
/**
 * Resolves once a statement of `db`'s database (on table `table`, when given) waits for a lock, one a test
 * holds in a transaction of its own to stop a request at that point; fails saying `what` after 10 s.
 */
async function untilLockWaited(db: Knex, what: string, table?: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  const waiting = async () =>
    ((await db.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ?", [table === undefined ? '%' : `%"${table}"%`])).rows[0].n as number) > 0;
  while (!(await waiting())) {
    if (Date.now() >= deadline) throw new Error(what);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Stops a request at a lock: a transaction of the test takes what `hold` locks, `send` sends the request, and
 * once a statement waits for a lock (on `at`, a table, when given) `meanwhile` runs, with the holding
 * transaction to change what the request will find; then the test lets go. Resolves with `send`'s answer and
 * what `meanwhile` returned (awaited before the test lets go: a request it starts to race the held one is
 * returned inside an object). Fails saying `what` when the request never waits.
 */
export async function whileHeld<T, M>(
  db: Knex,
  options: { hold: (trx: Knex.Transaction) => Promise<unknown>; send: () => PromiseLike<T>; meanwhile: (trx: Knex.Transaction) => Promise<M>; what: string; at?: string },
): Promise<{ answer: T; meanwhile: M }> {
  const trx = await db.transaction();
  let sent: Promise<T> | undefined;
  try {
    await options.hold(trx);
    sent = Promise.resolve(options.send());
    await untilLockWaited(db, options.what, options.at);
    const meanwhile = await options.meanwhile(trx);
    await trx.commit();
    return { answer: await sent, meanwhile };
  } finally {
    if (!trx.isCompleted()) await trx.rollback();
    await sent?.catch(() => undefined);
  }
}

/**
 * Stops an ADMIN's request at the ADMIN's own row, as a change of the ADMIN in flight holds it, and meanwhile
 * makes that change what a demotion commits (the roles, and every session of the ADMIN ended): the answer.
 * Fails saying `what` when the request never waits for the row.
 */
export async function duringDemotion<T>(db: Knex, adminId: string, send: () => PromiseLike<T>, what: string): Promise<T> {
  const { answer } = await whileHeld(db, {
    hold: (trx) => trx('users').where({ id: adminId }).forUpdate().first('id'),
    send,
    meanwhile: async (trx) => {
      await trx('users').where({ id: adminId }).update({ roles: ['STANDARD_USER'] });
      await trx('sessions').where({ user_id: adminId }).update({ revoked_at: trx.fn.now(), revoked_reason: 'user-changed' });
    },
    what,
  });
  return answer;
}

export function uniqueUsername(label = 'user'): string {
  return `${label}-${randomUUID()}@example.com`;
}

/**
 * Starts one identity app for a test file. `env` overrides configuration the way the environment
 * would; bcrypt runs at cost 4 through config, as every test should.
 */
export async function startIdentity(env: Record<string, string> = {}): Promise<IdentityHarness> {
  const database = await createTestDatabase('identity', migrations);
  const testRedis = await createTestRedis('identity');
  const mail = await startCaptureServer();
  const sms = await startCaptureServer();
  const baseEnv: Record<string, string> = { ...identityTestEnv({ mail, sms }), OPENAPI_VALIDATE_RESPONSES: 'true', ...env };
  const firstConfig = loadConfig(identityConfigSpec, baseEnv);
  const log = captureLogger('identity');
  const hasher = await createPasswordHasher({ cost: firstConfig.BCRYPT_COST, threads: firstConfig.PASSWORD_HASH_THREADS, niceness: firstConfig.PASSWORD_HASH_NICENESS });
  const mailer = createMailer({ provider: 'http', url: firstConfig.MAIL_HTTP_URL, timeoutMs: firstConfig.NOTIFY_HTTP_TIMEOUT_MS }, log.logger);
  // As the composition root does: the revocation mirror checked before the first request.
  const revocations = await startRevocationKeeper(database.db, testRedis.redis, firstConfig, log.logger);
  /** The app as a process started with these settings would make it, on the harness's database, Redis and providers. */
  const build = async (config: IdentityConfig) => {
    // As index.ts does outside local: JWT_PRIVATE_KEY when a test sets it (key rotation), else a fresh key.
    const signingKey = await signingKeyFromPem(config.JWT_PRIVATE_KEY !== '' ? config.JWT_PRIVATE_KEY : generateSigningKeyPem());
    const previousKeys = await Promise.all(config.JWT_PREVIOUS_PUBLIC_KEYS.map(verificationKeyFromPem));
    const app = createApp({
      config,
      logger: log.logger,
      db: database.db,
      redis: testRedis.redis,
      metrics: createMetrics('identity'),
      lifecycle: { draining: false },
      hasher,
      signingKey,
      previousKeys,
      mailer,
      revocations,
      sms: createSmsSender({ provider: 'http', url: config.SMS_HTTP_URL, token: config.SMS_HTTP_TOKEN, timeoutMs: config.NOTIFY_HTTP_TIMEOUT_MS }, log.logger),
    });
    return { app, config, signingKey };
  };
  const first = await build(firstConfig);
  const harness: IdentityHarness = {
    ...first,
    db: database.db,
    redis: testRedis.redis,
    log,
    mail,
    sms,
    hasher,
    async restart(overrides) {
      Object.assign(harness, await build(loadConfig(identityConfigSpec, { ...baseEnv, ...overrides })));
    },
    createUser: (fields = {}) => insertTestUser(database.db, hasher, fields),
    async login(user) {
      const res = await request(harness.app).post('/v1/auth/login').send({ username: user.username, password: user.password });
      if (res.status !== 200) throw new Error(`login failed with ${res.status}: ${JSON.stringify(res.body)}`);
      return res.body as { accessToken: string; refreshToken: string };
    },
    async tokenFor(roles) {
      return (await harness.login(await harness.createUser({ roles }))).accessToken;
    },
    viaGateway(method, target, origin) {
      const facts = { method, target, forwardedFor: origin.address, forwardedProto: 'http', clientKeyId: origin.clientKeyId ?? '' };
      return {
        'x-forwarded-for': facts.forwardedFor,
        'x-forwarded-proto': facts.forwardedProto,
        ...(origin.clientKeyId === undefined ? {} : { 'x-client-key-id': origin.clientKeyId }),
        'x-internal-assertion': assertForwarding(harness.config.INTERNAL_ASSERTION_KEY, facts),
      };
    },
    revocations,
    loseRedisData: () => testRedis.flush(),
    snapshotRedisData: () => testRedis.snapshot(),
    async close() {
      await revocations.stop();
      await hasher.close();
      await mail.close();
      await sms.close();
      await testRedis.close();
      await database.drop();
    },
  };
  return harness;
}
