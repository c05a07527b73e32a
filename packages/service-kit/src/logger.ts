import pino, { type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

/** Field names whose values never reach a log line, at any depth we log. */
const SECRET_FIELDS = [
  'password',
  'newPassword',
  'token',
  'accessToken',
  'refreshToken',
  'jwtToken',
  'code',
  'secret',
  'privateKey',
  'authorization',
  'signature',
  'cookie',
];

/** pino redaction paths covering the secret fields at the top level and two levels down. */
export const REDACT_PATHS = [
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
  ...SECRET_FIELDS.map((f) => `*.*.${f}`),
  'req.headers.authorization',
  'req.headers.signature',
  'req.headers["signature-input"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

export interface LoggerOptions {
  /** The deployable's name, on every line as `service`. */
  service: string;
  level?: string;
  /** Where lines go; stdout when omitted. Tests pass a capturing stream. */
  destination?: DestinationStream;
}

/** The one JSON logger of a process: ISO timestamps, the service name, secrets redacted. */
export function createLogger(options: LoggerOptions): Logger {
  const settings = {
    level: options.level ?? 'info',
    base: { service: options.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return pino(settings, options.destination ?? sharedStdout());
}

let stdout: DestinationStream | undefined;

/** The one stdout destination of the process, shared by its loggers (one exit hook, one write queue). */
function sharedStdout(): DestinationStream {
  return (stdout ??= turnBatchedStdout());
}

/**
 * stdout written once per event-loop turn: the lines logged during a turn are handed to pino's asynchronous
 * destination (sonic-boom) together when the turn ends (`setImmediate`), so a busy process makes one
 * write of several request lines instead of a write per line (each write costs a thread-pool hop and a
 * syscall: ~6 % of the gateway's CPU per answer at 1,500 req/s, bench/README.md, issue 27). A line is
 * never held longer than the turn it was logged in, and the lines logged right before `process.exit`
 * (the crash handler's) are written synchronously on exit.
 */
function turnBatchedStdout(): DestinationStream {
  const out = pino.destination({ dest: 1, sync: false });
  // Ended by pino when the event loop runs dry (`beforeExit`); the typings do not name the flag.
  const ended = () => (out as { destroyed?: boolean }).destroyed === true;
  let pending = '';
  const handOver = (): void => {
    const text = pending;
    pending = '';
    if (text !== '' && !ended()) out.write(text);
  };
  process.once('exit', () => {
    handOver();
    if (!ended()) out.flushSync();
  });
  return {
    write(line: string) {
      if (pending === '') setImmediate(handOver);
      pending += line;
    },
  };
}
