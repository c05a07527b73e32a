import type { RequestHandler } from 'express';
import { BadRequestError } from '@platform/errors';

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
