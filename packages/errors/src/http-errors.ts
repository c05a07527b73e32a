/** What an `HttpError` may carry besides its status and message. */
export interface HttpErrorOptions {
  /** One entry per problem (validation violations, failing checks). */
  messages?: readonly string[];
  /** Response headers that belong to the error (Allow, Retry-After, WWW-Authenticate). */
  headers?: Readonly<Record<string, string>>;
  /** The underlying fault; logged, never sent. */
  cause?: unknown;
}

/**
 * An error that names its HTTP answer. Domain code throws these; one middleware renders them.
 * The message is sent to the client, so it must never contain secrets, SQL or upstream text.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly messages: readonly string[] | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: number, message: string, options: HttpErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = status;
    this.messages = options.messages;
    this.headers = options.headers ?? {};
  }
}

/** 400: the request is malformed or breaks a rule of the contract. */
export class BadRequestError extends HttpError {
  constructor(message = 'Bad Request', options?: HttpErrorOptions) {
    super(400, message, options);
  }
}

/** 401: no valid credentials or signature. Messages are fixed texts so they are never an oracle. */
export class UnauthorizedError extends HttpError {
  constructor(message = 'Bad Credentials', options?: HttpErrorOptions) {
    super(401, message, options);
  }
}

/** 403: authenticated, but the caller's roles or ownership do not allow the operation. */
export class ForbiddenError extends HttpError {
  constructor(message = 'You are not allowed to perform this operation', options?: HttpErrorOptions) {
    super(403, message, options);
  }
}

/** 404: the route or the named resource does not exist. */
export class NotFoundError extends HttpError {
  constructor(message = 'Not Found', options?: HttpErrorOptions) {
    super(404, message, options);
  }
}

/** 405: the route exists but not for this method; `allow` becomes the Allow header. */
export class MethodNotAllowedError extends HttpError {
  constructor(method: string, allow: readonly string[], options?: HttpErrorOptions) {
    super(405, `Method ${method} is not allowed here; allowed: ${allow.join(', ')}`, {
      ...options,
      headers: { ...options?.headers, Allow: allow.join(', ') },
    });
  }
}

/** 409: the request repeats something that must be unique (username, account, nonce, idempotency key). */
export class ConflictError extends HttpError {
  constructor(message = 'Conflict', options?: HttpErrorOptions) {
    super(409, message, options);
  }
}

/** 413: the body is larger than the configured limit. */
export class PayloadTooLargeError extends HttpError {
  constructor(message = 'Request body is too large', options?: HttpErrorOptions) {
    super(413, message, options);
  }
}

/** 415: the body is not of a media type the operation accepts. */
export class UnsupportedMediaTypeError extends HttpError {
  constructor(message = 'Unsupported Content-Type; send application/json', options?: HttpErrorOptions) {
    super(415, message, options);
  }
}

/** 429: a rate limit was hit; `retryAfterSeconds` becomes the Retry-After header. */
export class TooManyRequestsError extends HttpError {
  readonly retryAfterSeconds: number;

  constructor(message: string, retryAfterSeconds: number, options?: HttpErrorOptions) {
    const seconds = Number.isFinite(retryAfterSeconds) ? Math.max(1, Math.ceil(retryAfterSeconds)) : 1;
    super(429, message, { ...options, headers: { ...options?.headers, 'Retry-After': String(seconds) } });
    this.retryAfterSeconds = seconds;
  }
}

/** The only message a 500 ever carries: fixed text, the request id travels in X-Request-Id. */
export const INTERNAL_ERROR_MESSAGE = 'An unexpected error occurred; quote the X-Request-Id header when reporting it';

/** 500: a bug. Its cause is logged, never sent. */
export class InternalServerError extends HttpError {
  constructor(options?: HttpErrorOptions) {
    super(500, INTERNAL_ERROR_MESSAGE, options);
  }
}

/** 501: a documented operation whose implementation has not landed yet. */
export class NotImplementedError extends HttpError {
  constructor(message = 'This operation is not available yet', options?: HttpErrorOptions) {
    super(501, message, options);
  }
}

/** 502: an upstream could not be reached or answered nonsense. */
export class BadGatewayError extends HttpError {
  constructor(message = 'Upstream service unavailable', options?: HttpErrorOptions) {
    super(502, message, options);
  }
}

/** Seconds a 503 asks the client to wait before it tries again, unless the error says otherwise. */
export const SERVICE_UNAVAILABLE_RETRY_AFTER_S = 1;

/**
 * 503: a dependency (database, Redis) is down or being restored, or the process is draining. A retry can
 * cure every one of them, so each carries `Retry-After` (CONTRACT.md part 13): 1 s unless `retryAfterSeconds`
 * says otherwise. Clients (the SDK) retry once after it.
 */
export class ServiceUnavailableError extends HttpError {
  readonly retryAfterSeconds: number;

  constructor(message = 'Service temporarily unavailable', options?: HttpErrorOptions & { retryAfterSeconds?: number }) {
    const wanted = options?.retryAfterSeconds ?? SERVICE_UNAVAILABLE_RETRY_AFTER_S;
    const seconds = Number.isFinite(wanted) ? Math.max(1, Math.ceil(wanted)) : SERVICE_UNAVAILABLE_RETRY_AFTER_S;
    super(503, message, { ...options, headers: { ...options?.headers, 'Retry-After': String(seconds) } });
    this.retryAfterSeconds = seconds;
  }
}

/** 504: an upstream did not answer in time. */
export class GatewayTimeoutError extends HttpError {
  constructor(message = 'Upstream service timed out', options?: HttpErrorOptions) {
    super(504, message, options);
  }
}
