import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeRedis, createLogger, createRedis, dropDatabase, waitForRedis } from '@platform/service-kit';
import { TEST_REDIS_URL } from '@platform/service-kit/testing';
import { freePort, testDatabaseUrl } from '../../support/processes.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

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
  admin: { username: string; password: string };
  /** What the processes wrote, for a failing test's message. */
  output: () => string;
  stop: () => Promise<void>;
}

async function untilReady(url: string, child: ChildProcess, deadlineMs: number): Promise<void> {
  while (Date.now() < deadlineMs) {
    if (child.exitCode !== null) throw new Error(`${url} exited with ${child.exitCode} before it was ready`);
    const ready = await fetch(`${url}/health/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} was not ready in time`);
}

/**
 * Starts identity, risk and gateway from the sources as `pnpm start` does (APP_ENV=local: each creates,
 * migrates and, for risk, seeds its database), wired to the given mail and SMS providers.
 */
export async function startStack(providers: { mailUrl: string; smsUrl: string }): Promise<Stack> {
  const run = `e2e_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const [identityPort, riskPort, gatewayPort, managementPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const keyDir = await mkdtemp(join(tmpdir(), 'e2e-keys-'));
  const admin = { username: `admin-${run}@example.com`, password: 'e2e-admin-password' };
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    APP_ENV: 'local',
    LOG_LEVEL: 'warn',
    IDENTITY_PORT: String(identityPort),
    RISK_PORT: String(riskPort),
    GATEWAY_PORT: String(gatewayPort),
    GATEWAY_MANAGEMENT_PORT: String(managementPort),
    IDENTITY_URL: `http://127.0.0.1:${identityPort}`,
    RISK_URL: `http://127.0.0.1:${riskPort}`,
    IDENTITY_JWKS_URL: `http://127.0.0.1:${identityPort}/.well-known/jwks.json`,
    IDENTITY_DATABASE_URL: testDatabaseUrl(`${run}_identity`),
    RISK_DATABASE_URL: testDatabaseUrl(`${run}_risk`),
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: `${run}:`,
    BOOTSTRAP_ADMIN_USERNAME: admin.username,
    BOOTSTRAP_ADMIN_PASSWORD: admin.password,
    // Config, not a code path: the end-to-end walk needs real hashing, not production cost.
    BCRYPT_COST: '4',
    JWT_LOCAL_KEY_FILE: join(keyDir, 'jwt.pem'),
    MAIL_PROVIDER: 'http',
    MAIL_HTTP_URL: providers.mailUrl,
    SMS_PROVIDER: 'http',
    SMS_HTTP_URL: providers.smsUrl,
  };
  let output = '';
  const children = [
    { entry: 'services/identity/src/index.ts', url: env.IDENTITY_URL! },
    { entry: 'services/risk/src/index.ts', url: env.RISK_URL! },
    { entry: 'gateway/src/index.ts', url: `http://127.0.0.1:${gatewayPort}` },
  ].map(({ entry, url }) => {
    const child = spawn(process.execPath, ['--conditions=development', '--disable-warning=ExperimentalWarning', entry], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    return { child, url };
  });

  const stop = async () => {
    await Promise.all(
      children.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
    await dropDatabase(env.IDENTITY_DATABASE_URL!);
    await dropDatabase(env.RISK_DATABASE_URL!);
    await rm(keyDir, { recursive: true, force: true });
    const redis = createRedis({ url: TEST_REDIS_URL, keyPrefix: '', logger: createLogger({ service: 'e2e', level: 'silent' }) });
    if (await waitForRedis(redis, 2000)) {
      const keys = await redis.keys(`${run}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await closeRedis(redis);
  };

  try {
    const deadline = Date.now() + 60_000;
    for (const { child, url } of children) await untilReady(url, child, deadline);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${output}`);
  }
  return {
    gatewayUrl: `http://127.0.0.1:${gatewayPort}`,
    gatewayManagementUrl: `http://127.0.0.1:${managementPort}`,
    identityUrl: env.IDENTITY_URL!,
    riskUrl: env.RISK_URL!,
    databaseUrls: { identity: env.IDENTITY_DATABASE_URL!, risk: env.RISK_DATABASE_URL! },
    admin,
    output: () => output,
    stop,
  };
}
