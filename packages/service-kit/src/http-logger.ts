import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import type { Logger } from './logger.ts';

/** What an incoming X-Request-Id must look like to be trusted and echoed; anything else gets a new id. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Paths polled by orchestrators and scrapers: not worth a line each. */
const QUIET_PATHS = /^\/(health\/(live|ready)|metrics)(\?|$)/;

/** The request id of this request: the caller's when well-formed, else a new UUID; echoed in X-Request-Id. */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  res.setHeader('X-Request-Id', id);
  return id;
}

/**
 * One log line per request with its id, method, URL, status and duration. Requests are serialised by
 * allow-list (no headers, no bodies), so credentials and signatures cannot reach the log by accident;
 * `req.log` is a child logger carrying the request id for everything logged while handling it.
 */
export function httpLogger(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: assignRequestId,
    autoLogging: { ignore: (req) => QUIET_PATHS.test(req.url ?? '') },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    customSuccessMessage: (req, res) => `${req.method} ${res.statusCode}`,
    customErrorMessage: (req, res) => `${req.method} ${res.statusCode}`,
    serializers: {
      req: (req: { id: unknown; method: string; url: string; remoteAddress?: string }) => ({
        id: req.id,
        method: req.method,
        url: req.url,
        remoteAddress: req.remoteAddress,
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  }) as RequestHandler;
}
