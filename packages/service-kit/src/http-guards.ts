import type { RequestHandler } from 'express';
import { BadRequestError, SERVICE_UNAVAILABLE_RETRY_AFTER_S, errorBody } from '@platform/errors';
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
      // A retry may well be served (whatever was slow recovers), so the answer says when, as every 503 does.
      res.setHeader('Retry-After', String(SERVICE_UNAVAILABLE_RETRY_AFTER_S));
      res.status(503).json(errorBody(503, DEADLINE_MESSAGE, req.originalUrl, [DEADLINE_MESSAGE]));
    }, deadlineMs);
    // 'close' comes with the end of every answer, and when the client goes away first.
    res.once('close', () => clearTimeout(timer));
    next();
  };
}

/** The 400 message for text carrying a NUL character. */
export const NUL_MESSAGE = 'Text must not contain the NUL character (U+0000)';

/** The 400 message for text that is not well-formed Unicode (a lone surrogate, as JSON's "\ud800" makes). */
export const MALFORMED_TEXT_MESSAGE = 'Text must be well-formed Unicode: a lone surrogate (such as \\ud800) is no character';

/**
 * What is wrong with the text of `value` (a parsed JSON body or query), in any string or key at any depth:
 * a NUL, or a lone surrogate; undefined when nothing is.
 */
function textProblem(value: unknown): string | undefined {
  // Iterative: a body may legally nest thousands of levels deep, which must not exhaust the stack.
  const pending: unknown[] = [value];
  const check = (text: string): string | undefined => (text.includes('\u0000') ? NUL_MESSAGE : text.isWellFormed() ? undefined : MALFORMED_TEXT_MESSAGE);
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === 'string') {
      const problem = check(next);
      if (problem !== undefined) return problem;
    } else if (typeof next === 'object' && next !== null) {
      for (const [key, item] of Object.entries(next)) {
        const problem = check(key);
        if (problem !== undefined) return problem;
        pending.push(item);
      }
    }
  }
  return undefined;
}

/**
 * Refuses a NUL character anywhere in the path, the query or the JSON body with 400, and text that is not
 * well-formed Unicode. No field of the API may hold a NUL, and Postgres cannot store one in text: let
 * through, it fails the query as a 500. A lone surrogate cannot be stored either: the driver writes U+FFFD
 * instead, so what was stored would silently differ from what was sent.
 */
export const rejectMalformedText: RequestHandler = (req, _res, next) => {
  const path = req.originalUrl.split('?', 1)[0] ?? '';
  const problem = /%00/i.test(path) ? NUL_MESSAGE : (textProblem(req.query) ?? textProblem(req.body));
  next(problem === undefined ? undefined : new BadRequestError(problem, { messages: [problem] }));
};
