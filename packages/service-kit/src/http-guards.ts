import { isUtf8 } from 'node:buffer';
import type { RequestHandler } from 'express';
import { BadRequestError, UnsupportedMediaTypeError } from '@platform/errors';

/** The 400 message for text carrying a NUL character. */
export const NUL_MESSAGE = 'Text must not contain the NUL character (U+0000)';

/** The 400 message for text that is not well-formed Unicode (a lone surrogate, as JSON's "\ud800" makes). */
export const MALFORMED_TEXT_MESSAGE = 'Text must be well-formed Unicode: a lone surrogate (such as \\ud800) is no character';

/** The 400 message for a JSON body whose bytes are not UTF-8. */
export const NOT_UTF8_MESSAGE = 'Request body is not valid UTF-8';

/** The 415 message for a JSON body declared in another charset than UTF-8. */
export const UTF8_ONLY_MESSAGE = 'Unsupported body encoding or charset; send UTF-8 JSON';

/**
 * express.json's `verify`: JSON between systems is UTF-8 (RFC 8259 section 8.1). Another declared charset is
 * 415 (the parser takes any `utf-*`: UTF-16 and UTF-7 too, whose decoding lets different bytes give the same
 * text), and bytes that are not UTF-8 are 400, which the parser would decode with U+FFFD in place of each bad
 * sequence: what was stored would differ from what was sent, and two passwords differing there would be one.
 */
export function requireUtf8(_req: object, _res: unknown, raw: Buffer, encoding: string): void {
  if (encoding !== 'utf-8') throw new UnsupportedMediaTypeError(UTF8_ONLY_MESSAGE, { messages: [UTF8_ONLY_MESSAGE] });
  if (!isUtf8(raw)) throw new BadRequestError(NOT_UTF8_MESSAGE, { messages: [NOT_UTF8_MESSAGE] });
}

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

/** Where `noteFormFields` leaves the names a form body carries, for `rejectDroppedFormFields`. */
const FORM_FIELDS = Symbol('form field names');
type WithFormFields = { [FORM_FIELDS]?: readonly string[] };

/** The 400 message of a form field the schema cannot have, as the validator words an unknown field. */
const UNKNOWN_FORM_FIELD_MESSAGE = 'body must NOT have additional properties';

/** express.urlencoded's `verify`: notes the names of the form's fields as sent, before the parser reads them. */
export function noteFormFields(req: object, _res: unknown, raw: Buffer): void {
  // Without a byte order mark, which the parser drops too.
  (req as WithFormFields)[FORM_FIELDS] = [...new URLSearchParams(raw.toString('utf8').replace(/^\uFEFF/, '')).keys()];
}

/**
 * Refuses with 400 a form whose parsed body lacks a field that was sent: the parser drops a `__proto__`
 * (however it is spelt) and an empty name without a word, so the validator, which sees only the parsed body,
 * would take a form that says more than it reads. Such a field is no field of any schema.
 */
export const rejectDroppedFormFields: RequestHandler = (req, _res, next) => {
  const names = (req as WithFormFields)[FORM_FIELDS];
  const body: unknown = req.body;
  const dropped = names !== undefined && typeof body === 'object' && body !== null && names.some((name) => !Object.hasOwn(body, name));
  next(dropped ? new BadRequestError(UNKNOWN_FORM_FIELD_MESSAGE, { messages: [UNKNOWN_FORM_FIELD_MESSAGE] }) : undefined);
};
