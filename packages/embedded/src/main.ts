// The embedded local stack: what `pnpm start` runs (scripts/start-local.ts) when, in `local`, Postgres or
// Redis cannot be reached. `--postgres`: both service databases on PGlite behind Postgres-protocol
// sockets; `--redis`: one in-process Redis stand-in. Gateway, identity and risk run in this one process
// (their own composition roots, each handed its environment, the shared stand-in and its exit) so they
// share the stand-in; each stops on SIGINT/SIGTERM as usual, and the process ends after the last one,
// once the embedded databases are closed.
// Its launcher (@platform/stack) turns tracing off in the environment it gives this process.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { type Host, createLogger, packageRoot } from '@platform/service-kit';
import { startGateway } from '../../../gateway/src/index.ts';
import { startIdentity } from '../../../services/identity/src/index.ts';
import { startRisk } from '../../../services/risk/src/index.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded-postgres.ts';
import { inProcessRedis } from './in-process-redis.ts';

const { values: embed } = parseArgs({ options: { postgres: { type: 'boolean', default: false }, redis: { type: 'boolean', default: false } } });
const root = join(packageRoot(import.meta.url), '..', '..');
const dataRoot = process.env.EMBEDDED_DATA_DIR ?? join(root, '.local', 'pglite');
const logger = createLogger({ service: 'embedded', level: process.env.LOG_LEVEL ?? 'info' });
// All three start at once: the others fetch identity's token keys only when a request needs them.
const COMPOSITION_ROOTS = { identity: startIdentity, risk: startRisk, gateway: startGateway } as const;
const SERVICES = Object.keys(COMPOSITION_ROOTS);

logger.warn(
  {
    postgres: embed.postgres ? `embedded PGlite, data in ${dataRoot}` : 'as configured',
    redis: embed.redis ? 'in-process stand-in (ioredis-mock), lost on exit' : 'as configured',
  },
  'EMBEDDED FALLBACK: gateway, identity and risk run in this one process on embedded stand-ins; for development only',
);

const databases: EmbeddedPostgres[] = [];
async function closeDatabases(): Promise<number> {
  let code = 0;
  for (const db of databases.splice(0)) {
    await db.close().catch((err: unknown) => {
      code = 1;
      logger.error({ err, dataDir: db.dataDir }, 'failed to close an embedded database');
    });
  }
  return code;
}

let started = false;
const stopped = new Map<string, number>();
/** The exit a deployable calls once it has drained: the process ends after the last one, databases closed. */
const exitOf = (service: string) => (code: number) => {
  if (stopped.has(service)) return;
  stopped.set(service, code);
  if (stopped.size < SERVICES.length) return;
  void closeDatabases().then((closeCode) => {
    const exitCode = Math.max(closeCode, ...stopped.values());
    logger.info({ exitCode }, 'embedded stack stopped');
    process.exit(exitCode);
  });
};
// The deployables drain on the first stop request once they listen. Before that, or on a second
// request, the process ends at once, as each of them would alone.
let stopRequests = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    stopRequests += 1;
    if (started && stopRequests === 1) return;
    logger.warn({ signal }, started ? 'second stop request: exiting now' : 'stop requested while starting: exiting');
    process.exit(1);
  });
}

try {
  // What the deployables are handed instead of the servers they cannot reach; this process's own
  // environment is left as it is.
  const replaced: NodeJS.ProcessEnv = {};
  if (embed.postgres) {
    // One after the other: both run on this one thread, and in parallel they only take longer.
    const identityDb = await startEmbeddedPostgres(join(dataRoot, 'identity'));
    databases.push(identityDb);
    const riskDb = await startEmbeddedPostgres(join(dataRoot, 'risk'));
    databases.push(riskDb);
    replaced.IDENTITY_DATABASE_URL = identityDb.url;
    replaced.RISK_DATABASE_URL = riskDb.url;
    logger.info({ identity: identityDb.url, risk: riskDb.url, dataDir: dataRoot }, 'embedded Postgres (PGlite) listening');
  }
  // Only so that the deployables' own start lines do not name the unreachable server.
  if (embed.redis) replaced.REDIS_URL = 'redis://in-process.invalid:6379/0';
  const hostOf = (service: string): Host => ({
    env: { ...process.env, ...replaced },
    createRedis: embed.redis ? inProcessRedis : undefined,
    exit: exitOf(service),
  });
  await Promise.all(Object.entries(COMPOSITION_ROOTS).map(([service, start]) => start(hostOf(service))));
  started = true;
} catch (err) {
  logger.fatal({ err }, 'the embedded stack failed to start');
  await closeDatabases();
  process.exit(1);
}
