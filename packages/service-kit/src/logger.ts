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

let timeOfMs = Number.NaN;
let timeField = '';
let secondOfField = Number.NaN;
/** The field up to the second's dot: `,"time":"2026-12-01T18:27:52.`. */
let secondField = '';

/**
 * The `time` field of a line written at `now` (ms), as pino's `isoTime` writes it (`new Date(now).toISOString()`):
 * the date and time are formatted once per second, and only the milliseconds for each line. Formatting a Date
 * per millisecond was still 2.5 µs of a cached hit's line at one pace, where no two answers share one (the
 * speed issue's profile); the lines of one request burst share their millisecond.
 */
export function timeFieldAt(now: number): string {
  if (now === timeOfMs) return timeField;
  timeOfMs = now;
  const ms = ((now % 1000) + 1000) % 1000;
  const second = now - ms;
  if (second !== secondOfField) {
    secondOfField = second;
    // toISOString ends in `.sssZ` whatever the year (six digits and a sign beyond 9999).
    secondField = `,"time":"${new Date(second).toISOString().slice(0, -4)}`;
  }
  timeField = `${secondField}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z"`;
  return timeField;
}

const isoTime = (): string => timeFieldAt(Date.now());

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
  return (stdout ??= heldStdout());
}

/** How long a line may wait for others before it is written (the lines of a burst go out in one `write(2)`). */
export const LOG_HOLD_MS = 10;
/**
 * The most one write carries: a line that would take the lines held past it is written after them, in a
 * write of its own. A pipe takes a write of at most PIPE_BUF (4 KiB on Linux) whole, so the lines of the
 * processes sharing one stdout pipe (`pnpm start | tee`, a container runtime) never splice into each other.
 */
export const LOG_HOLD_BYTES = 4096;

/**
 * stdout written synchronously, in batches: the lines logged within LOG_HOLD_MS of the first one waiting
 * are handed to pino's destination (sonic-boom) together, as one `write(2)` of at most LOG_HOLD_BYTES. An
 * asynchronous write (pino's default) costs ~40 µs of CPU per call on this machine kind (the thread-pool
 * hop, its wake-ups and the completion) against ~2 µs for the same write made synchronously (the bench
 * diary, `git show f0a4e11:bench/README.md`, issue 27); and a write per event-loop turn still cost a request
 * served alone in its turn (a steady pace, not a burst) ~5 µs of its CPU (issue 44's profiles). A line is
 * never held longer than LOG_HOLD_MS, and the lines logged right before `process.exit` (the crash handler's,
 * a drained shutdown's) are written on exit; only a process killed outright (SIGKILL) loses its last
 * LOG_HOLD_MS of lines. The price of writing synchronously: a reader of stdout that stops reading (a full
 * pipe) stalls the process at its next write, where the asynchronous writer would have buffered without
 * bound.
 */
function heldStdout(): DestinationStream {
  // Synchronous, so pino never ends it at exit; a closed stdout (EPIPE) makes its write a no-op.
  const out = pino.destination({ dest: 1, sync: true });
  let pending = '';
  let pendingBytes = 0;
  let hold: NodeJS.Timeout | undefined;
  const handOver = (): void => {
    if (hold !== undefined) clearTimeout(hold);
    hold = undefined;
    const text = pending;
    pending = '';
    pendingBytes = 0;
    if (text !== '') out.write(text);
  };
  process.once('exit', handOver);
  return {
    write(line: string) {
      const bytes = Buffer.byteLength(line);
      if (pendingBytes + bytes > LOG_HOLD_BYTES) handOver();
      pending += line;
      pendingBytes += bytes;
      // Unref'd: a process whose work is done exits at once, and its exit writes what is held.
      if (hold === undefined) hold = setTimeout(handOver, LOG_HOLD_MS).unref();
    },
  };
}
