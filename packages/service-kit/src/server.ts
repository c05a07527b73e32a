import { type RequestListener, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Lifecycle } from './health.ts';
import type { Logger } from './logger.ts';

/** A listening HTTP server and its address. */
export interface ServerHandle {
  server: Server;
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  url: string;
  /** Stops accepting, waits for in-flight requests up to `drainTimeoutMs`, then cuts what is left. */
  close: (drainTimeoutMs?: number) => Promise<void>;
}

/** Starts an HTTP server for `app` on `host:port` (port 0 picks a free one). */
export async function listen(app: RequestListener, port: number, host = '127.0.0.1'): Promise<ServerHandle> {
  const server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port: bound } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    url: `http://${shownHost}:${bound}`,
    close: (drainTimeoutMs = 10_000) => drain(server, drainTimeoutMs),
  };
}

function drain(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    const cut = setTimeout(() => server.closeAllConnections(), timeoutMs);
    // close() stops accepting and closes the sockets idle right now; a busy keep-alive socket becomes
    // idle only after its answer, so keep sweeping until the last one is gone.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearTimeout(cut);
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}

export interface ShutdownOptions {
  logger: Logger;
  lifecycle: Lifecycle;
  servers: readonly ServerHandle[];
  drainTimeoutMs: number;
  /** Run in order after the servers have drained: close pools, Redis, workers. */
  closers: ReadonlyArray<{ name: string; close: () => Promise<void> }>;
  /** Called with the exit code; `process.exit` outside tests. */
  exit?: (code: number) => void;
}

/**
 * Graceful shutdown on SIGTERM and SIGINT: mark not ready, stop accepting, drain in-flight requests
 * (cut after `drainTimeoutMs`), then close each resource, then exit 0. A second signal exits 1 at once.
 * Returns the shutdown function, so a composition root can also call it on a fatal start-up error.
 */
export function stopOnSignals(options: ShutdownOptions): (reason: string) => Promise<void> {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const shutdown = async (reason: string): Promise<void> => {
    if (stopping) {
      options.logger.warn({ reason }, 'second stop request: exiting now');
      exit(1);
      return;
    }
    stopping = true;
    options.lifecycle.draining = true;
    options.logger.info({ reason, drainTimeoutMs: options.drainTimeoutMs }, 'draining');
    await Promise.all(options.servers.map((s) => s.close(options.drainTimeoutMs)));
    let exitCode = 0;
    for (const { name, close } of options.closers) {
      try {
        await close();
      } catch (err) {
        exitCode = 1;
        options.logger.error({ err, resource: name }, 'failed to close');
      }
    }
    options.logger.info({ exitCode }, 'stopped');
    exit(exitCode);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return shutdown;
}
