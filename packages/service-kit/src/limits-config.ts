import { env } from './config.ts';

/**
 * The HTTP limits every process reads from its environment: the outer request deadline and how long
 * a client may take to send its request. `requestDeadlineMs` is the process's default deadline.
 */
export function httpLimitsSpec(defaults: { requestDeadlineMs: number }) {
  return {
    REQUEST_DEADLINE_MS: env.integer('Longest time one request may take; past it the answer is 503 in the error shape', { min: 100, max: 600_000 }, {
      default: defaults.requestDeadlineMs,
    }),
    HTTP_HEADERS_TIMEOUT_MS: env.integer('Time a client has to send the request headers; a slower one is cut (slow-loris)', { min: 100, max: 120_000 }, {
      default: 10_000,
    }),
    HTTP_REQUEST_TIMEOUT_MS: env.integer('Time a client has to send the whole request, body included', { min: 100, max: 600_000 }, { default: 30_000 }),
  };
}

/** What `listen` takes from `httpLimitsSpec`'s values: a connection idle past the deadline and the request timeout, and 10 s more, is cut. */
export function serverLimitsOf(config: { REQUEST_DEADLINE_MS: number; HTTP_HEADERS_TIMEOUT_MS: number; HTTP_REQUEST_TIMEOUT_MS: number }) {
  return {
    headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: config.HTTP_REQUEST_TIMEOUT_MS,
    idleTimeoutMs: Math.max(config.REQUEST_DEADLINE_MS, config.HTTP_REQUEST_TIMEOUT_MS) + 10_000,
  };
}

/** The Postgres client limits of the services with a database: nothing waits on a dead server for long. */
export const databaseLimitsSpec = {
  DB_CONNECT_TIMEOUT_MS: env.integer('How long opening a Postgres connection may take', { min: 100, max: 60_000 }, { default: 2000 }),
  DB_STATEMENT_TIMEOUT_MS: env.integer('Server-side limit of one SQL statement (the client gives up 1 s later)', { min: 100, max: 600_000 }, {
    default: 5000,
  }),
};
