import { currentRequest } from './http-logger.ts';
import type { Logger } from './logger.ts';

let installed = false;

/**
 * Crash-only handling of what nothing caught (a throw in a callback, a promise rejected with nobody
 * waiting): the process is in a state nobody reasoned about, so it logs the error, with the id of the
 * request whose handling raised it when there is one, and exits 1 for its supervisor to restart it.
 * No request may ever get here: each such line is a bug. Installed once per process, so the embedded
 * stack (three deployables in one process) logs it once.
 */
export function exitOnUncaughtErrors(logger: Logger, exit: (code: number) => void = (code) => process.exit(code)): void {
  if (installed) return;
  installed = true;
  process.on('uncaughtException', (err, origin) => {
    const request = currentRequest();
    (request?.logger ?? logger).fatal({ err, origin, requestId: request?.id }, 'uncaught error: exiting');
    exit(1);
  });
}
