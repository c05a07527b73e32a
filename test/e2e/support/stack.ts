import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type StackRedis, freePort, startStack as launch } from '@platform/stack';
import { TEST_POSTGRES_URL, TEST_REDIS_URL, testRedisClusterNodes } from '@platform/service-kit/testing';

/** The three real processes of one end-to-end run, on free ports, with their own databases and Redis keys. */
export interface Stack {
  gatewayUrl: string;
  /** The gateway's management port (/metrics, /health/*). */
  gatewayManagementUrl: string;
  /** The services, for tests that call them directly as an attacker inside the network would. */
  identityUrl: string;
  riskUrl: string;
  /** The services' databases. */
  databaseUrls: { identity: string; risk: string };
  /** The Redis the processes share (one server, or the test cluster's seeds), and the key prefix of this run on it. */
  redis: StackRedis;
  admin: { username: string; password: string };
  /** What the processes wrote (every line, when LOG_LEVEL lets it through), for assertions and failing tests' messages. */
  output: () => string;
  /** Starts one more gateway beside the first (same environment, same Redis, and `settings`): a second replica; its URL. */
  startGatewayReplica: (settings?: Record<string, string>) => Promise<string>;
  /** Starts one more risk beside the first (same environment, same database and Redis, and `settings`); its URL. */
  startRiskReplica: (settings?: Record<string, string>) => Promise<string>;
  stop: () => Promise<void>;
}

/**
 * Starts identity, risk and gateway from the sources as `pnpm start` does (APP_ENV=local: each creates,
 * migrates and, for risk, seeds its database), wired to the given mail and SMS providers; `settings`
 * adds to (or overrides) the environment of all three; `redisUrl` is the Redis they share (by default the
 * test Redis, or the test cluster when TEST_REDIS_CLUSTER_NODES names one: REDIS_CLUSTER_NODES then), always
 * under a key prefix of this run.
 */
export async function startStack(
  providers: { mailUrl: string; smsUrl: string },
  settings: Record<string, string> = {},
  options: { redisUrl?: string } = {},
): Promise<Stack> {
  const run = `e2e_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const keyDir = await mkdtemp(join(tmpdir(), 'e2e-keys-'));
  const admin = { username: `admin-${run}@example.com`, password: 'e2e-admin-password' };
  const clusterNodes = options.redisUrl === undefined ? testRedisClusterNodes() : undefined;
  const redis: StackRedis =
    clusterNodes !== undefined ? { clusterNodes: clusterNodes.join(','), prefix: `${run}:` } : { url: options.redisUrl ?? TEST_REDIS_URL, prefix: `${run}:` };
  try {
    const stack = await launch({
      env: {
        PATH: process.env.PATH,
        APP_ENV: 'local',
        LOG_LEVEL: 'warn',
        BOOTSTRAP_ADMIN_USERNAME: admin.username,
        BOOTSTRAP_ADMIN_PASSWORD: admin.password,
        // Config, not a code path: the end-to-end walk needs real hashing, not production cost.
        BCRYPT_COST: '4',
        JWT_LOCAL_KEY_FILE: join(keyDir, 'jwt.pem'),
        MAIL_PROVIDER: 'http',
        MAIL_HTTP_URL: providers.mailUrl,
        SMS_PROVIDER: 'http',
        SMS_HTTP_URL: providers.smsUrl,
        ...settings,
      },
      databases: { serverUrl: TEST_POSTGRES_URL, run },
      redis,
      output: 'capture',
    });
    return {
      gatewayUrl: stack.urls.gateway,
      gatewayManagementUrl: stack.gatewayManagementUrl,
      identityUrl: stack.urls.identity,
      riskUrl: stack.urls.risk,
      databaseUrls: { identity: String(stack.env.IDENTITY_DATABASE_URL), risk: String(stack.env.RISK_DATABASE_URL) },
      redis,
      admin,
      output: () => stack.output(),
      // Its own management port: the first gateway holds the stack's.
      startGatewayReplica: async (replicaSettings = {}) =>
        (await stack.start('gateway', { as: `gateway-${stack.processes.length}`, env: { GATEWAY_MANAGEMENT_PORT: String(await freePort()), ...replicaSettings } })).url,
      startRiskReplica: async (replicaSettings = {}) => (await stack.start('risk', { as: `risk-${stack.processes.length}`, env: replicaSettings })).url,
      stop: async () => {
        await stack.stop();
        await rm(keyDir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(keyDir, { recursive: true, force: true });
    throw err;
  }
}
