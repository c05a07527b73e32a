import {
  BadRequestError,
  HttpError,
  InternalServerError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  ServiceUnavailableError,
  UnsupportedMediaTypeError,
} from './http-errors.ts';
import { isDependencyUnavailable } from './dependency-unavailable.ts';
import { reasonPhrase } from './error-body.ts';

/** The part of the request an error message may name. */
export interface RequestLine {
  method: string;
  path: string;
}

/** A request path that is not valid percent-encoding, however it was found. */
const PATH_ENCODING_MESSAGE = 'The request path is not valid percent-encoding';

/** One violation as express-openapi-validator reports it. */
interface ValidatorViolation {
  path?: unknown;
  message?: unknown;
}

/** The fields we read from express-openapi-validator's errors (duck-typed: no dependency on the library). */
interface ValidatorError {
  status: number;
  errors: ValidatorViolation[];
  headers?: Record<string, unknown>;
  message?: unknown;
}

function isValidatorError(err: unknown): err is ValidatorError {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { status?: unknown }).status === 'number' &&
    Array.isArray((err as { errors?: unknown }).errors)
  );
}

/**
 * `/body/user/name` → `body.user.name`: the location a client can find in its own request, named as
 * OpenAPI names it (the validator's `params` is OpenAPI's `path`).
 */
function violationText(violation: ValidatorViolation): string {
  // The validator's own word for a path it cannot decode (`malformed uri'`, a stray quote and all), said as
  // the router's URIError is.
  if (typeof violation.message === 'string' && /^malformed uri'?$/.test(violation.message)) return PATH_ENCODING_MESSAGE;
  const location =
    typeof violation.path === 'string'
      ? violation.path.replace(/^[./]+/, '').replaceAll('/', '.').replace(/^params(?=\.|$)/, 'path')
      : '';
  const message = typeof violation.message === 'string' ? violation.message : 'is invalid';
  const named = message === ADDITIONAL_PROPERTY ? withoutOddName(location) : location;
  return named === '' ? message : `${named} ${message}`;
}

/** The validator's word for a field the schema does not have: the location ends in the field's name, the client's text. */
const ADDITIONAL_PROPERTY = 'must NOT have additional properties';

/** A field name a message may repeat: short and plain. */
const PLAIN_NAME = /^[A-Za-z0-9_$-]{1,64}$/;

/**
 * The location of an unknown field (`body.user.extra`), or only the part of the request it is in (`body`)
 * when a name on the way is not a plain one: the field's name is the client's text (it may hold dots and
 * slashes, so where it starts cannot be told), and a message must not echo, say, a whole JSON body sent as a
 * form, a token and all, into error bodies and whatever logs them.
 */
function withoutOddName(location: string): string {
  const [part = '', ...names] = location.split('.');
  return names.every((name) => PLAIN_NAME.test(name)) ? location : part;
}

function fromValidator(err: ValidatorError, req: RequestLine): HttpError {
  switch (err.status) {
    case 400: {
      const messages = err.errors.map(violationText);
      if (messages.length === 0) messages.push('Request validation failed');
      return new BadRequestError(messages.join('; '), { messages, cause: err });
    }
    case 404:
      return new NotFoundError(`No route for ${req.method} ${req.path}`, { cause: err });
    case 405: {
      const allow = typeof err.headers?.Allow === 'string' ? err.headers.Allow.split(/\s*,\s*/) : [];
      return new MethodNotAllowedError(req.method, allow, { cause: err });
    }
    case 413:
      return new PayloadTooLargeError(undefined, { cause: err });
    case 415:
      return new UnsupportedMediaTypeError(undefined, { cause: err });
    default:
      // 500 from the validator means the response broke the contract, or the document is broken: a bug.
      return new InternalServerError({ cause: err });
  }
}

/** The fields we read from body-parser's (express.json's) errors. */
interface BodyParserError {
  type: string;
  limit?: unknown;
}

function isBodyParserError(err: unknown): err is BodyParserError {
  return typeof err === 'object' && err !== null && typeof (err as { type?: unknown }).type === 'string';
}

function fromBodyParser(err: BodyParserError): HttpError | undefined {
  switch (err.type) {
    case 'entity.parse.failed':
      return new BadRequestError('Request body is not valid JSON', { cause: err });
    case 'entity.too.large':
      return new PayloadTooLargeError(
        typeof err.limit === 'number' ? `Request body is larger than ${err.limit} bytes` : undefined,
        { cause: err },
      );
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new UnsupportedMediaTypeError('Unsupported body encoding or charset; send UTF-8 JSON', { cause: err });
    case 'parameters.too.many':
      // A form body (the token endpoints') with more fields than it may have: malformed, not too large.
      return new BadRequestError('The form has too many fields', { cause: err });
    case 'request.aborted':
    case 'request.size.invalid':
      return new BadRequestError('Request body was incomplete', { cause: err });
    default:
      return undefined;
  }
}

/**
 * Client errors raised by Express itself: its router throws a URIError with status 400 for a path that
 * is not valid percent-encoding, and http-errors marks 4xx errors meant for the client with `expose`.
 * Any other error with a `status` field (an HTTP client's, about some other server) stays a 500. Their
 * messages are not ours, so the client reads fixed text.
 */
function fromStatusError(err: unknown): HttpError | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { status, statusCode, expose } = err as { status?: unknown; statusCode?: unknown; expose?: unknown };
  const code = typeof status === 'number' ? status : statusCode;
  if (typeof code !== 'number' || !Number.isInteger(code) || code < 400 || code > 499) return undefined;
  if (err instanceof URIError) return new BadRequestError(PATH_ENCODING_MESSAGE, { cause: err });
  return expose === true ? new HttpError(code, reasonPhrase(code), { cause: err }) : undefined;
}

/**
 * Maps anything thrown during a request onto the `HttpError` that answers it. This is the one place
 * where faults become statuses: our own errors pass through, validator and body-parser errors become
 * 4xx with fixed wording, and everything else is a 500 whose cause is kept for the log only.
 */
export function toHttpError(err: unknown, req: RequestLine = { method: 'GET', path: '/' }): HttpError {
  if (err instanceof HttpError) return err;
  if (isValidatorError(err)) return fromValidator(err, req);
  if (isBodyParserError(err)) {
    const mapped = fromBodyParser(err);
    if (mapped) return mapped;
  }
  const flagged = fromStatusError(err);
  if (flagged) return flagged;
  // A database or Redis that is down or frozen is an outage the client may retry through, not a bug.
  if (isDependencyUnavailable(err)) return new ServiceUnavailableError(undefined, { cause: err });
  return new InternalServerError({ cause: err });
}
