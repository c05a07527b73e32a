import { randomBytes } from 'node:crypto';
import { freshEnvironment } from '@platform/auth/testing';
import type { Role } from '@platform/auth';
import { type Redis, loadConfig } from '@platform/service-kit';
import { type Knex, createDatabase } from '@platform/service-kit/database';
import { TEST_POSTGRES_URL, TEST_REDIS_URL, type TestRedis, createTestRedis, testRedisClusterNodes, uniqueName } from '@platform/service-kit/testing';
import { type Deployable, type StartedProcess, startStack as launch } from '@platform/stack';
import { replayBornKey } from '../../../gateway/src/admission/admission.ts';
import { type CaptureServer, startCaptureServer } from '../../../services/identity/test/support/capture-server.ts';
import { type TestUser, type TestUserFields, identityTestEnv, insertTestUser } from '../../../services/identity/test/support/identity-harness.ts';
import { type SigningKey, generateSigningKeyPem, signingKeyFromPem } from '../../../services/identity/src/auth/signing-key.ts';
import { type IdentityConfig, identityConfigSpec } from '../../../services/identity/src/config.ts';
import { type PasswordHasher, createPasswordHasher } from '../../../services/identity/src/passwords/password-hasher.ts';
import { type TestSigningKey, signedHeaders } from '../../../gateway/test/support/signing-client.ts';
import { type Answer, sendRaw } from './raw-http.ts';
import { baseEnv } from './service-process.ts';

const CLIENT_SECRET = 'stack-hmac-secret-0123456789abcdef';
/** The one client key of the stack. */
export const CLIENT_KEY: TestSigningKey = { keyId: 'stack-hmac', alg: 'hmac-sha256', secret: CLIENT_SECRET };

/** What a test may set on one call through the gateway. */
export interface CallOptions {
  /** JSON-encoded unless already bytes. */
  body?: unknown;
  bearer?: string;
  /** Extra headers, signed when covered (content-type is). */
  headers?: Record<string, string>;
  idempotencyKey?: string;
}

/** A user of the stack with a live session. */
export interface LoggedInUser extends TestUser {
  accessToken: string;
  refreshToken: string;
}

/** What a process wrote to its log, as a test reads it back. */
export interface ProcessLog {
  /** Every JSON line so far, parsed. */
  lines: () => Array<Record<string, unknown>>;
  /** Everything so far, raw text. */
  text: () => string;
}

/** Identity as the stack runs it: its own process, and what a test needs beside it. */
export interface StackIdentity {
  /** The settings identity runs with, as its process reads them from the same environment. */
  config: IdentityConfig;
  /** Identity's database (created and migrated by identity itself, APP_ENV=local). */
  db: Knex;
  /** A client on the stack's Redis under the stack's key prefix: the keys identity sees. */
  redis: Redis;
  log: ProcessLog;
  mail: CaptureServer;
  /** The SMS provider stub. */
  sms: CaptureServer;
  /** The key identity signs access tokens with (JWT_PRIVATE_KEY). */
  signingKey: SigningKey;
  /** Stores a user directly (fixtures); defaults: ACTIVE STANDARD_USER with a random e-mail. */
  createUser(fields?: TestUserFields): Promise<TestUser>;
  /** Stops identity (it drains) and starts it again on the same port with its environment and `env`: a key rotation, say. */
  restart(env: Record<string, string>): Promise<void>;
}

/**
 * The whole platform as `pnpm start` runs it: three processes from @platform/stack's launcher on free
 * ports, real Postgres and Redis, one gateway in front.
 */
export interface Stack {
  gatewayUrl: string;
  /** The gateway's management port (/metrics, /health/*). */
  gatewayManagementUrl: string;
  identityUrl: string;
  riskUrl: string;
  identity: StackIdentity;
  riskDb: Knex;
  logs: { gateway: ProcessLog; risk: ProcessLog };
  /** A correctly signed request through the gateway. */
  call(method: string, target: string, options?: CallOptions): Promise<Answer>;
  /** A fixture user (ACTIVE, given roles), logged in through the gateway. */
  userWith(roles: Role[], fields?: TestUserFields): Promise<LoggedInUser>;
  /** A digest of every row of every table of both databases (but records of failed logins): equal digests, no change. */
  snapshot(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Rows a refused request may add: a failed login is recorded in the audit trail (CONTRACT.md part 11), and
 * a login is refused however malformed its username. Everything else a refused request must leave alone.
 */
const RECORDS_OF_REFUSALS: Readonly<Record<string, string>> = { audit_events: "t.type <> 'login.failed'" };

async function tableDigests(db: Knex): Promise<string> {
  const { rows } = await db.raw<{ rows: Array<{ tablename: string }> }>(
    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'knex_%' ORDER BY tablename",
  );
  const digests: string[] = [];
  for (const { tablename } of rows) {
    const result = await db.raw<{ rows: Array<{ digest: string | null; n: string }> }>(
      `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest, count(*) AS n FROM ?? t WHERE ${RECORDS_OF_REFUSALS[tablename] ?? 'true'}`,
      [tablename],
    );
    digests.push(`${tablename}:${result.rows[0]?.n}:${result.rows[0]?.digest ?? '-'}`);
  }
  return digests.join(' ');
}

/** The log of every process `of` returns (a restarted deployable's old and new ones), JSON lines parsed. */
function processLog(of: () => readonly StartedProcess[]): ProcessLog {
  const text = () =>
    of()
      .map((p) => p.output())
      .join('');
  return {
    text,
    lines: () =>
      text()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/**
 * Starts identity, risk and the gateway through the launcher (@platform/stack), as `pnpm start` does: each
 * process reads its own configuration, creates and migrates its database of this run (risk seeds the
 * stations), and all three share one Redis key prefix of this run (the test cluster's when
 * TEST_REDIS_CLUSTER_NODES names one), as in production. Identity sends mail and SMS to capture servers.
 * `env` adds identity settings; `gatewayEnv` gateway settings.
 */
export async function startStack(options: { env?: Record<string, string>; gatewayEnv?: Record<string, string> } = {}): Promise<Stack> {
  const run = uniqueName('reliability');
  const testRedis: TestRedis = await createTestRedis('reliability');
  const mail = await startCaptureServer();
  const sms = await startCaptureServer();
  const hasher: PasswordHasher = await createPasswordHasher({ cost: 4, threads: 1 });
  const cleanups: Array<() => Promise<unknown>> = [() => testRedis.close(), () => mail.close(), () => sms.close(), () => hasher.close()];
  const cleanUp = async () => {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  };
  try {
    // A new environment, not a Redis that lost its data (CONTRACT.md part 13): the revocations and the client
    // key's replay store are whole from the start, so a request signed in the stack's first second is served.
    await freshEnvironment(testRedis.redis, [replayBornKey(CLIENT_KEY.keyId)]);

    const common: Record<string, string> = {
      ...baseEnv(),
      APP_ENV: 'local',
      // Every line, as the tests of what is and is not logged need.
      LOG_LEVEL: 'debug',
      OPENAPI_VALIDATE_RESPONSES: 'true',
      // One key for the three, known to the tests that forge or check assertions.
      INTERNAL_ASSERTION_KEY: randomBytes(32).toString('base64url'),
    };
    let identityEnv: Record<string, string> = {
      ...common,
      ...identityTestEnv({ mail, sms }),
      LOGIN_FAILURES_PER_MIN: '100000',
      JWT_PRIVATE_KEY: generateSigningKeyPem(),
      ...options.env,
    };
    const clusterNodes = testRedisClusterNodes();
    const stack = await launch({
      env: common,
      envOf: {
        identity: identityEnv,
        risk: { RISK_INDEX_POLL_MS: '60000' },
        gateway: { GATEWAY_CLIENT_KEYS: JSON.stringify([{ keyId: CLIENT_KEY.keyId, alg: CLIENT_KEY.alg, secret: CLIENT_SECRET }]), ...options.gatewayEnv },
      },
      databases: { serverUrl: TEST_POSTGRES_URL, run },
      redis: clusterNodes !== undefined ? { clusterNodes: clusterNodes.join(','), prefix: testRedis.keyPrefix } : { url: TEST_REDIS_URL, prefix: testRedis.keyPrefix },
      output: 'capture',
    });
    cleanups.push(() => stack.stop());
    const databaseOf = (name: Deployable) => {
      const db = createDatabase({ url: String(stack.env[name === 'identity' ? 'IDENTITY_DATABASE_URL' : 'RISK_DATABASE_URL']), applicationName: `reliability-${name}` });
      cleanups.push(() => db.destroy());
      return db;
    };
    const identityDb = databaseOf('identity');
    const riskDb = databaseOf('risk');
    const processesOf = (name: Deployable) => () => stack.processes.filter((p) => p.name === name);

    const identity: StackIdentity = {
      config: loadConfig(identityConfigSpec, identityEnv),
      db: identityDb,
      redis: testRedis.redis,
      log: processLog(processesOf('identity')),
      mail,
      sms,
      signingKey: await signingKeyFromPem(identityEnv.JWT_PRIVATE_KEY as string),
      createUser: (fields) => insertTestUser(identityDb, hasher, fields),
      async restart(env) {
        identityEnv = { ...identityEnv, ...env };
        await stack.processOf('identity').stop();
        await stack.start('identity', { port: Number(new URL(stack.urls.identity).port), env: identityEnv });
        identity.config = loadConfig(identityConfigSpec, identityEnv);
        identity.signingKey = await signingKeyFromPem(identityEnv.JWT_PRIVATE_KEY as string);
      },
    };

    const call: Stack['call'] = (method, target, callOptions = {}) => {
      const { body } = callOptions;
      const bytes = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
      const headers = signedHeaders(method, target, {
        key: CLIENT_KEY,
        body: bytes,
        bearer: callOptions.bearer,
        headers: callOptions.headers,
        idempotencyKey: callOptions.idempotencyKey,
      });
      // Framed by its length whatever the method (node:http frames a DELETE's body by nothing).
      if (bytes !== undefined) headers['content-length'] ??= String(bytes.length);
      return sendRaw(stack.urls.gateway, method, target, headers, bytes);
    };

    return {
      gatewayUrl: stack.urls.gateway,
      gatewayManagementUrl: stack.gatewayManagementUrl,
      identityUrl: stack.urls.identity,
      riskUrl: stack.urls.risk,
      identity,
      riskDb,
      logs: { gateway: processLog(processesOf('gateway')), risk: processLog(processesOf('risk')) },
      call,
      async userWith(roles, fields = {}) {
        const user = await identity.createUser({ ...fields, roles });
        const res = await call('POST', '/v1/auth/login', { body: { username: user.username, password: user.password } });
        if (res.status !== 200) throw new Error(`login through the gateway failed with ${res.status}: ${res.body.toString()}`);
        const { accessToken, refreshToken } = res.json() as { accessToken: string; refreshToken: string };
        return { ...user, accessToken, refreshToken };
      },
      snapshot: async () => `${await tableDigests(identityDb)} ${await tableDigests(riskDb)}`,
      close: cleanUp,
    };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}
