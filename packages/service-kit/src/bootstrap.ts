import type { RequestListener } from 'node:http';
import type { AppEnv } from './config.ts';
import { exitOnUncaughtErrors } from './crash.ts';
import type { Lifecycle } from './health.ts';
import type { Logger } from './logger.ts';
import { safeUrl } from './paths.ts';
import type { Redis, RedisOptions } from './redis.ts';
import { type ServerLimits, listen, stopOnSignals } from './server.ts';

/**
 * What a composition root is given by whatever runs it: the environment it reads its configuration
 * from and, for several deployables in one process (the embedded local stack), what that host shares.
 */
export interface Host {
  env: NodeJS.ProcessEnv;
  /** Makes the Redis client in place of `createRedis` (the embedded stack: one in-process stand-in for all). */
  createRedis?: (options: RedisOptions) => Redis;
  /** Called instead of `process.exit(code)` once the deployable has drained and closed. */
  exit?: (code: number) => void;
}

export interface ServeOptions {
  service: string;
  appEnv: AppEnv;
  app: RequestListener;
  port: number;
  host: string;
  logger: Logger;
  lifecycle: Lifecycle;
  drainTimeoutMs: number;
  /** How long a client may take to send its request (slow-loris protection). */
  limits?: ServerLimits;
  /** What the process is connected to, logged with the listen line (passwords removed from URLs). */
  connections: Record<string, string>;
  /** Closed in order after the server drained. */
  closers: ReadonlyArray<{ name: string; close: () => Promise<void> }>;
  /** A second, internal port (metrics, health) on the same host, drained with the first. */
  management?: { app: RequestListener; port: number };
  /** Ends the process after the stop; `process.exit` unless the host runs several deployables (Host.exit). */
  exit?: (code: number) => void;
}

/**
 * Listens, says where and on what, and drains then closes everything on SIGTERM/SIGINT; an error nothing
 * caught is logged with its request id and ends the process with 1.
 */
export async function serveUntilStopped(options: ServeOptions): Promise<void> {
  exitOnUncaughtErrors(options.logger);
  const server = await listen(options.app, options.port, options.host, options.limits);
  const management = options.management === undefined ? undefined : await listen(options.management.app, options.management.port, options.host, options.limits);
  const connections = Object.fromEntries(Object.entries(options.connections).map(([k, v]) => [k, safeUrl(v)]));
  options.logger.info(
    { url: server.url, ...(management === undefined ? {} : { managementUrl: management.url }), appEnv: options.appEnv, ...connections },
    `${options.service} listening on ${server.url}${management === undefined ? '' : ` (management on ${management.url})`} (APP_ENV=${options.appEnv})`,
  );
  stopOnSignals({
    logger: options.logger,
    lifecycle: options.lifecycle,
    servers: management === undefined ? [server] : [server, management],
    drainTimeoutMs: options.drainTimeoutMs,
    closers: options.closers,
    exit: options.exit,
  });
}
