import type { Role } from '@platform/auth';
import { type Knex, type ServerHandle, createMetrics, listen, loadConfig } from '@platform/service-kit';
import { type CapturedLogger, type TestDatabase, captureLogger, createTestDatabase } from '@platform/service-kit/testing';
import { type Gateway, createGateway } from '../../../gateway/src/app.ts';
import { markReplayStoreWhole } from '../../../gateway/test/support/gateway-harness.ts';
import { gatewayConfigSpec } from '../../../gateway/src/config.ts';
import { loadApiDocumentFor } from '../../../gateway/src/docs/load-api-document.ts';
import { type Answer, sendRaw } from './raw-http.ts';
import { type TestSigningKey, signedHeaders } from '../../../gateway/test/support/signing-client.ts';
import { type IdentityHarness, type TestUser, startIdentity } from '../../../services/identity/test/support/identity-harness.ts';
import { migrations as riskMigrations } from '../../../services/risk/migrations/index.ts';
import { seedStationData } from '../../../services/risk/seeds/station-data.ts';
import { createRisk } from '../../../services/risk/src/app.ts';
import { riskConfigSpec } from '../../../services/risk/src/config.ts';
import { type StationIndexLoader, createStationIndexLoader } from '../../../services/risk/src/weather-stations/station-index-loader.ts';

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

/** The whole platform in this process: real apps on real ports, real Postgres and Redis, one gateway in front. */
export interface Stack {
  gatewayUrl: string;
  /** The gateway's management port (/metrics, /health/*). */
  gatewayManagementUrl: string;
  identityUrl: string;
  riskUrl: string;
  identity: IdentityHarness;
  riskDb: Knex;
  logs: { gateway: CapturedLogger; risk: CapturedLogger };
  /** A correctly signed request through the gateway. */
  call(method: string, target: string, options?: CallOptions): Promise<Answer>;
  /** A fixture user (ACTIVE, given roles), logged in through the gateway. */
  userWith(roles: Role[], fields?: Parameters<IdentityHarness['createUser']>[0]): Promise<LoggedInUser>;
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

/**
 * Starts identity (fresh database, capture servers for mail and SMS), risk (fresh seeded database, an
 * index fed from it, tokens checked against identity's JWKS) and the gateway, all sharing one Redis key
 * prefix as in production. `env` adds identity settings; `gatewayEnv` gateway settings.
 */
export async function startStack(options: { env?: Record<string, string>; gatewayEnv?: Record<string, string> } = {}): Promise<Stack> {
  const identity = await startIdentity({ LOGIN_FAILURES_PER_MIN: '100000', ...options.env });
  const servers: ServerHandle[] = [];
  // Through `identity.app` on every request: `identity.restart(env)` is a restart of identity behind the same URL.
  const identityServer = await listen((req, res) => identity.app(req, res), 0);
  servers.push(identityServer);
  const jwksUrl = `${identityServer.url}/.well-known/jwks.json`;

  const riskDatabase: TestDatabase = await createTestDatabase('reliability_risk', riskMigrations);
  await seedStationData(riskDatabase.db);
  const riskLog = captureLogger('risk');
  const riskConfig = loadConfig(riskConfigSpec, { OPENAPI_VALIDATE_RESPONSES: 'true', IDENTITY_JWKS_URL: jwksUrl, RISK_INDEX_POLL_MS: '60000' });
  const stations: StationIndexLoader = createStationIndexLoader({ db: riskDatabase.db, logger: riskLog.logger, pollIntervalMs: riskConfig.RISK_INDEX_POLL_MS });
  await stations.start();
  const risk = createRisk({
    config: riskConfig,
    logger: riskLog.logger,
    redis: identity.redis,
    metrics: createMetrics('risk'),
    lifecycle: { draining: false },
    stations,
  });
  const riskServer = await listen(risk.app, 0);
  servers.push(riskServer);

  const gatewayConfig = loadConfig(gatewayConfigSpec, {
    APP_ENV: 'local',
    IDENTITY_URL: identityServer.url,
    RISK_URL: riskServer.url,
    IDENTITY_JWKS_URL: jwksUrl,
    GATEWAY_CLIENT_KEYS: JSON.stringify([{ keyId: CLIENT_KEY.keyId, alg: CLIENT_KEY.alg, secret: CLIENT_SECRET }]),
    ...options.gatewayEnv,
  });
  const gatewayLog = captureLogger('gateway');
  // A new environment, not a Redis that lost its data: the client key's replay store is whole from the
  // start, as the harness's revocation mirror is (identity-harness.ts).
  await markReplayStoreWhole(identity.redis, [CLIENT_KEY.keyId]);
  const gateway: Gateway = createGateway({
    config: gatewayConfig,
    logger: gatewayLog.logger,
    redis: identity.redis,
    metrics: createMetrics('gateway'),
    lifecycle: { draining: false },
    apiDocument: await loadApiDocumentFor(gatewayConfig),
  });
  const gatewayServer = await listen(gateway.app, 0, '127.0.0.1', {
    headersTimeoutMs: gatewayConfig.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: gatewayConfig.HTTP_REQUEST_TIMEOUT_MS,
  });
  servers.push(gatewayServer);
  const managementServer = await listen(gateway.management, 0, '127.0.0.1');
  servers.push(managementServer);

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
    return sendRaw(gatewayServer.url, method, target, headers, bytes);
  };

  return {
    gatewayUrl: gatewayServer.url,
    gatewayManagementUrl: managementServer.url,
    identityUrl: identityServer.url,
    riskUrl: riskServer.url,
    identity,
    riskDb: riskDatabase.db,
    logs: { gateway: gatewayLog, risk: riskLog },
    call,
    async userWith(roles, fields = {}) {
      const user = await identity.createUser({ ...fields, roles });
      const res = await call('POST', '/v1/auth/login', { body: { username: user.username, password: user.password } });
      if (res.status !== 200) throw new Error(`login through the gateway failed with ${res.status}: ${res.body.toString()}`);
      const { accessToken, refreshToken } = res.json() as { accessToken: string; refreshToken: string };
      return { ...user, accessToken, refreshToken };
    },
    snapshot: async () => `${await tableDigests(identity.db)} ${await tableDigests(riskDatabase.db)}`,
    async close() {
      await Promise.all(servers.map((s) => s.close(1000)));
      gateway.close();
      risk.close();
      await stations.stop();
      await riskDatabase.drop();
      await identity.close();
    },
  };
}
