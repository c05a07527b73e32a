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

let timeOfMs = -1;
let timeField = '';

/**
 * pino's `isoTime` made once per millisecond: the lines of one request burst share their millisecond, and
 * formatting a Date for each was ~1 % of a service's CPU per answer (risk's profile, issue 27).
 */
function isoTime(): string {
  const now = Date.now();
  if (now !== timeOfMs) {
    timeOfMs = now;
    timeField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return timeField;
}

/** The one JSON logger of a process: ISO timestamps, the service name, secrets redacted. */
export function createLogger(options: LoggerOptions): Logger {
  const settings = {
    level: options.level ?? 'info',
    base: { service: options.service },
    timestamp: isoTime,
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
 * stdout written once per event-loop turn, synchronously: the lines logged during a turn are handed to
 * pino's destination (sonic-boom) together when the turn ends (`setImmediate`), as one `write(2)`. An
 * asynchronous write (pino's default) costs ~40 µs of CPU per call on this machine kind (the thread-pool
 * hop, its wake-ups and the completion) against ~2 µs for the same write made synchronously
 * (the bench diary, `git show f0a4e11:bench/README.md`, issue 27): per request line, that was ~6 % of the gateway's CPU per answer. A line is
 * never held past the turn it was logged in, and the lines logged right before `process.exit` (the crash
 * handler's) are written on exit. The price: a reader of stdout that stops reading (a full pipe) stalls the
 * process at its next turn's write, where the asynchronous writer would have buffered without bound.
 */
function turnBatchedStdout(): DestinationStream {
  // Synchronous, so pino never ends it at exit; a closed stdout (EPIPE) makes its write a no-op.
  const out = pino.destination({ dest: 1, sync: true });
  let pending = '';
  const handOver = (): void => {
    const text = pending;
    pending = '';
    if (text !== '') out.write(text);
  };
  process.once('exit', handOver);
  return {
    write(line: string) {
      if (pending === '') setImmediate(handOver);
      pending += line;
    },
  };
}
