import type { RequestHandler } from 'express';
import { BadRequestError, errorBody } from '@platform/errors';
import { requestLog } from './http-logger.ts';
import type { Logger } from './logger.ts';

/**
 * Headers on every answer of every process. The API answers JSON that is personal and never meant to
 * be rendered, framed, sniffed or cached: a route that wants otherwise (the JWKS may be cached, the
 * docs page needs its inline style) sets its own value, which replaces these.
 */
const SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = Object.entries({
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
});

/** Sets the security headers before any route runs, so error answers carry them too. */
export const securityHeaders: RequestHandler = (_req, res, next) => {
  for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
  next();
};

/** The message of an answer cut short by the deadline. */
export const DEADLINE_MESSAGE = 'The request took too long to complete; try again later';

/**
 * The outer deadline of every request: when no answer has started after `deadlineMs`, answer 503 in
 * the error shape, whatever the handler is still waiting for (a frozen database, a slow dependency).
 * Inner timeouts (statement, command, upstream) should fire first; this is the guarantee that a
 * client never waits longer. A handler that finishes later finds the answer sent, and its late
 * answer is dropped by the error handler.
 */
export function requestDeadline(deadlineMs: number, logger: Logger): RequestHandler {
  return (req, res, next) => {
    const timer = setTimeout(() => {
      if (res.headersSent) return;
      requestLog(req, logger).warn({ deadlineMs }, 'request deadline exceeded; answered 503');
      // `messages` always: the station operations require it, and it is optional everywhere else.
      res.status(503).json(errorBody(503, DEADLINE_MESSAGE, req.originalUrl, [DEADLINE_MESSAGE]));
    }, deadlineMs);
    // 'close' comes with the end of every answer, and when the client goes away first.
    res.once('close', () => clearTimeout(timer));
    next();
  };
}

/** True when `value` (a parsed JSON body or query) holds a NUL in any string or key, at any depth. */
function containsNul(value: unknown): boolean {
  // Iterative: a body may legally nest thousands of levels deep, which must not exhaust the stack.
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') {
      if (next.includes('\u0000')) return true;
    } else if (typeof next === 'object' && next !== null) {
      for (const [key, item] of Object.entries(next)) {
        if (key.includes('\u0000')) return true;
        pending.push(item);
      }
    }
  }
  return false;
}

/** The 400 message for text carrying a NUL character. */
export const NUL_MESSAGE = 'Text must not contain the NUL character (U+0000)';

/**
 * Refuses a NUL character anywhere in the path, the query or the JSON body with 400. No field of the
 * API may hold one, and Postgres cannot store one in text: let through, it fails the query as a 500.
 */
export const rejectNulCharacters: RequestHandler = (req, _res, next) => {
  const path = req.originalUrl.split('?', 1)[0] ?? '';
  if (/%00/i.test(path) || containsNul(req.query) || containsNul(req.body)) {
    next(new BadRequestError(NUL_MESSAGE, { messages: [NUL_MESSAGE] }));
    return;
  }
  next();
};
