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
  // Synchronous stdout by default: nothing is lost when the process exits right after a line.
  return options.destination ? pino(settings, options.destination) : pino(settings);
}
