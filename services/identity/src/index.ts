// First: OpenTelemetry hooks what every later import loads (only when OTEL_EXPORTER_OTLP_ENDPOINT is set).
import './tracing.ts';
import { isAbsolute, join } from 'node:path';
import {
  type Host,
  closeRedis,
  createLogger,
  createMetrics,
  createMetricsApp,
  createRedis,
  redisConnectionName,
  redisConnectionOf,
  loadConfigOrExit,
  stopTracing,
  packageRoot,
  serveUntilStopped,
  serverLimitsOf,
} from '@platform/service-kit';
import { connectDatabase } from '@platform/service-kit/database';
import { migrations } from '../migrations/index.ts';
import { createApp } from './app.ts';
import { startAuditPruning } from './audit/audit-retention.ts';
import { createPasswordHasher } from './passwords/password-hasher.ts';
import { startRevocations } from './sessions/revocations.ts';
import { loadOrCreateLocalKeyPem, signingKeyFromPem, verificationKeyFromPem } from './auth/signing-key.ts';
import { identityConfigProblems, identityConfigSpec } from './config.ts';
import { createMailer } from './notifications/mailer.ts';
import { createSmsSender } from './notifications/sms-sender.ts';
import { ensureBootstrapAdmin } from './users/bootstrap-admin.ts';

/**
 * Composition root: the only code that reads the environment, connects, and listens. Run as its own
 * process it is given this process's environment; the embedded local stack (packages/embedded) hands
 * each deployable its own environment, its Redis factory and its exit instead.
 */
export async function startIdentity(host: Host = { env: process.env }): Promise<void> {
  const config = loadConfigOrExit(identityConfigSpec, host.env, identityConfigProblems);
  const logger = createLogger({ service: 'identity', level: config.LOG_LEVEL });
  const lifecycle = { draining: false };

  const keyFile = isAbsolute(config.JWT_LOCAL_KEY_FILE) ? config.JWT_LOCAL_KEY_FILE : join(packageRoot(import.meta.url), config.JWT_LOCAL_KEY_FILE);
  const signingKey = await signingKeyFromPem(config.JWT_PRIVATE_KEY !== '' ? config.JWT_PRIVATE_KEY : await loadOrCreateLocalKeyPem(keyFile));
  const previousKeys = await Promise.all(config.JWT_PREVIOUS_PUBLIC_KEYS.map(verificationKeyFromPem));
  const hasher = await createPasswordHasher({ cost: config.BCRYPT_COST, threads: config.PASSWORD_HASH_THREADS, niceness: config.PASSWORD_HASH_NICENESS });
  const db = await connectDatabase({
    appEnv: config.APP_ENV,
    url: config.IDENTITY_DATABASE_URL,
    applicationName: 'identity',
    migrations,
    logger,
    connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS,
  });
  const redis = (host.createRedis ?? createRedis)({ ...redisConnectionOf(config), connectionName: 'identity', logger });
  const metrics = createMetrics('identity', { collectDefault: true });
  const mailer = createMailer(
    config.MAIL_PROVIDER === 'http' ? { provider: 'http', url: config.MAIL_HTTP_URL, timeoutMs: config.NOTIFY_HTTP_TIMEOUT_MS } : { provider: 'log' },
    logger,
  );
  const sms = createSmsSender(
    config.SMS_PROVIDER === 'http'
      ? { provider: 'http', url: config.SMS_HTTP_URL, token: config.SMS_HTTP_TOKEN, timeoutMs: config.NOTIFY_HTTP_TIMEOUT_MS }
      : { provider: 'log' },
    logger,
  );
  await ensureBootstrapAdmin({ db, hasher, logger }, { username: config.BOOTSTRAP_ADMIN_USERNAME, password: config.BOOTSTRAP_ADMIN_PASSWORD });

  const auditPruning = startAuditPruning({ db, logger, retentionDays: config.AUDIT_RETENTION_DAYS });
  const revocations = startRevocations({
    db,
    redis,
    accessTokenTtlS: config.ACCESS_TOKEN_TTL_S,
    intervalMs: config.REVOCATION_MIRROR_CHECK_MS,
    logger,
  });
  // Before listening: the first bearer request should not meet buckets nobody has looked at yet.
  await revocations.checkNow();

  await serveUntilStopped({
    service: 'identity',
    app: createApp({ config, logger, db, redis, metrics, lifecycle, hasher, signingKey, previousKeys, mailer, sms, revocations }),
    port: config.IDENTITY_PORT,
    // Only /metrics, for the NetworkPolicy that lets Prometheus in (docs/deploy.md); none by default.
    management: config.IDENTITY_METRICS_PORT === 0 ? undefined : { app: createMetricsApp({ logger, metrics }), port: config.IDENTITY_METRICS_PORT },
    host: config.HOST,
    logger,
    lifecycle,
    drainTimeoutMs: config.DRAIN_TIMEOUT_MS,
    limits: serverLimitsOf(config),
    appEnv: config.APP_ENV,
    exit: host.exit,
    connections: { postgres: config.IDENTITY_DATABASE_URL, redis: redisConnectionName(config) },
    closers: [
      { name: 'audit pruning', close: () => auditPruning.stop() },
      { name: 'revocations', close: () => revocations.stop() },
      { name: 'postgres', close: () => db.destroy() },
      { name: 'redis', close: () => closeRedis(redis) },
      { name: 'password workers', close: () => hasher.close() },
      // Last: the spans of the drained requests are flushed to the collector.
      { name: 'tracing', close: stopTracing },
    ],
  });
}

if (import.meta.main) await startIdentity();
