import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { isDependencyUnavailable } from './dependency-unavailable.ts';
import { errorBody } from './error-body.ts';
import { MethodNotAllowedError, NotFoundError } from './http-errors.ts';
import { oauthErrorBody } from './oauth-error.ts';
import { toHttpError } from './to-http-error.ts';

/** The 415 of a token endpoint (`oauth`), whose requests are form-encoded. */
const FORM_ONLY_MESSAGE = 'Unsupported Content-Type; send application/x-www-form-urlencoded';
/** The 400 of a token endpoint's request that has no body at all: the form, and its `token`, are missing. */
const NO_FORM_MESSAGE = 'The request has no body; send the form field token as application/x-www-form-urlencoded';

/** A request that announces no body (no Content-Type, no length or a length of 0, no chunks). */
function announcesNoBody(req: IncomingMessage): boolean {
  const { headers } = req;
  return headers['content-type'] === undefined && headers['transfer-encoding'] === undefined && (headers['content-length'] ?? '0') === '0';
}

/** How an error handler fills `messages`. */
export interface ErrorHandlerOptions {
  /**
   * `always`: every body carries `messages` (the station operations' rule, CONTRACT.md part 7);
   * `when-present`: only when the error names its problems (default); a function: `always` for the
   * requests it returns true for (the gateway's answers on station paths).
   */
  messages?: 'always' | 'when-present' | ((req: Request) => boolean);
  /**
   * True for the requests whose 400 is answered in RFC 6749 §5.2's shape instead of SPEC.md's: the token
   * endpoints' (CONTRACT.md part 16), and so is the 415 of a request there with no body at all (RFC 7009 and
   * 7662: its required `token` is missing, a malformed request). Their other errors keep SPEC.md's, as the
   * gateway's own answers there do; the 415 of a body of another type tells the media type they take
   * (form-encoded), not JSON.
   */
  oauth?: (req: Request) => boolean;
}

/**
 * Writes `body` as JSON as Express's `res.json` does with ETags off: its type and length, and no body for
 * a HEAD. Plain `node:http`, so that a request answered outside Express (the gateway's API front) gets
 * the same bytes.
 */
export function sendJson(req: IncomingMessage, res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(text)));
  res.end(req.method === 'HEAD' ? undefined : text);
}

/**
 * The 4-argument Express error middleware every process mounts last (and the gateway's API front calls
 * itself). Renders SPEC.md's error body with the error's headers, and hands 5xx causes to the request log
 * line (the request envelope reads `res.err`), so the log carries the stack and the request id while the
 * client gets fixed text; a 503 thrown without a cause (a refusal the process chose), or with one that says
 * a dependency is down (`isDependencyUnavailable`), hands on its message and the cause's instead
 * (`res.refusal`), which the line carries at warn; a fault after the client left, whose line is
 * written already, goes to `res.lateFault`. Plain `node:http` (`sendJson`) but for `originalUrl`, which
 * Express sets (and the front sets as Express would).
 */
export function errorHandler(options: ErrorHandlerOptions = {}): ErrorRequestHandler {
  const setting = options.messages;
  const always = typeof setting === 'function' ? setting : () => setting === 'always';
  return (err: unknown, req, res, next) => {
    if (res.writableEnded) {
      // The answer is already complete (the request deadline answered first): there is nothing left to
      // tell the client, and cutting the socket would only break the next request on a kept-alive one.
      return;
    }
    if (res.headersSent) {
      // Too late for a body: log it with the request, and let Express end the connection.
      (res as { err?: unknown }).err = err;
      next(err);
      return;
    }
    const httpError = toHttpError(err, { method: req.method, path: req.path ?? req.originalUrl.split('?', 1)[0] ?? '' });
    // A 503 thrown without a cause is a refusal the process chose (busy, starting, draining, a Redis loss's
    // recovery), and one whose cause says a dependency is down or too slow is the outage's (the client's own
    // line tells the outage once): not faults. Its line says why, at warn, with no stack: one per request
    // while Redis is down was an error line with the same stack each (17 441 in a minute of an outside attack).
    // A 503 wrapping anything else is a fault, logged as one.
    const { cause } = httpError;
    const refused = httpError.status === 503 && (cause === undefined || isDependencyUnavailable(cause));
    const lateFault = (res as { lateFault?: (fault: unknown) => void }).lateFault;
    if (lateFault !== undefined) {
      // The client left before any answer and the request's line is written (the request envelope): nobody
      // reads an answer now, but a fault still gets its line (a refusal is none).
      if (httpError.status >= 500 && !refused) lateFault(httpError.cause ?? httpError);
      return;
    }
    if (refused) {
      (res as { refusal?: string }).refusal = cause === undefined ? httpError.message : `${httpError.message}: ${(cause as Error).message}`;
    } else if (httpError.status >= 500) {
      (res as { err?: unknown }).err = httpError.cause ?? httpError;
    }
    for (const [name, value] of Object.entries(httpError.headers)) res.setHeader(name, value);
    const noForm = httpError.status === 415 && announcesNoBody(req);
    if ((httpError.status === 400 || noForm) && options.oauth?.(req) === true) {
      // RFC 6749 §5.2: never cached.
      res.setHeader('Cache-Control', 'no-store');
      sendJson(req, res, 400, oauthErrorBody(noForm ? NO_FORM_MESSAGE : httpError.message));
      return;
    }
    const message = httpError.status === 415 && options.oauth?.(req) === true ? FORM_ONLY_MESSAGE : httpError.message;
    const messages = httpError.messages ?? (always(req) ? [message] : undefined);
    sendJson(req, res, httpError.status, errorBody(httpError.status, message, req.originalUrl, messages));
  };
}

/** Mounted after every route: a request no route took is a 404 in the error shape. */
export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new NotFoundError(`No route for ${req.method} ${req.baseUrl}${req.path}`));
};

/** The methods an Express route answers, as an Allow header lists them. */
function allowedMethods(req: Request): string[] {
  const methods = (req.route as { methods?: Record<string, boolean> } | undefined)?.methods ?? {};
  const allow = Object.keys(methods)
    .filter((m) => m !== '_all')
    .map((m) => m.toUpperCase());
  if (allow.includes('GET') && !allow.includes('HEAD')) allow.push('HEAD');
  return allow;
}

/**
 * Put last on a route (`router.route(p).get(h).all(methodNotAllowedHandler)`): any other method gets
 * 405 with the Allow header listing the methods the route does answer.
 */
export const methodNotAllowedHandler: RequestHandler = (req, _res, next) => {
  next(new MethodNotAllowedError(req.method, allowedMethods(req)));
};
