/** Socket error codes of a dependency that cannot be reached or went away. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Postgres SQLSTATEs meaning "the server cannot serve right now", not "your query is wrong": class 08
 * (connection exception), 57014 (statement_timeout), 57P01–57P03 (shutdown, cannot connect now), 53300
 * (too many connections); and 40001, 40P01 (a transaction rolled back for a serialization failure or a
 * deadlock with another: its retry may succeed, the client's too).
 */
function isUnavailableSqlState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code === '57014' ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === '53300' ||
    code === '40001' ||
    code === '40P01'
  );
}

/** What pg, knex and ioredis say when their server is gone or silent (they set no code for these). */
const UNAVAILABLE_MESSAGES = [
  /^Knex: Timeout acquiring a connection/,
  /^Connection terminated/,
  /^Query read timeout$/,
  /timeout exceeded when trying to connect/,
  /^Client has encountered a connection error and is not queryable$/,
  /^Command timed out$/,
  /^Connection is closed\.?$/,
  /^Stream isn't writeable and enableOfflineQueue options is false$/,
  /^Reached the max retries per request limit/,
];

/**
 * True when `err` says a database or Redis is unreachable, too slow or shutting down, or that a transaction
 * lost a race it may win when run again: the request cannot be served now but may succeed later, which is a
 * 503, never a 500. Duck-typed on code, name and message, so this package needs none of the client libraries.
 */
export function isDependencyUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, name, message } = err as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string' && (UNREACHABLE_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isUnavailableSqlState(code)))) return true;
  // RedisServerUnknownError: service-kit's, a connection back whose server was not identified in time.
  if (name === 'KnexTimeoutError' || name === 'MaxRetriesPerRequestError' || name === 'RedisServerUnknownError') return true;
  return typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message));
}
