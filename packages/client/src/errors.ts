import type { ErrorBody } from './types.ts';

/** True when `value` has the field types of SPEC.md's error body (extra fields are tolerated). */
export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.timestamp === 'string' &&
    Number.isInteger(v.status) &&
    typeof v.error === 'string' &&
    typeof v.message === 'string' &&
    typeof v.path === 'string' &&
    (v.messages === undefined || (Array.isArray(v.messages) && v.messages.every((m) => typeof m === 'string')))
  );
}

/**
 * The error body of an answer. Every process answers in SPEC.md's shape; anything else (a proxy in
 * front of the gateway, an HTML error page) is wrapped in that shape so callers handle one type.
 */
export function errorBodyOf(status: number, statusText: string, text: string, path: string): ErrorBody {
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isErrorBody(parsed)) return parsed;
  const message = (parsed as { message?: unknown } | undefined)?.message;
  const snippet = text.trim().slice(0, 200);
  return {
    timestamp: new Date().toISOString(),
    status,
    error: statusText || 'Error',
    message: typeof message === 'string' ? message : snippet || statusText || `HTTP ${status}`,
    path,
  };
}

/** What an `ApiError` carries besides its body. */
export interface ApiErrorDetails {
  /** The method and URL the failing request went to. */
  method: string;
  url: string;
  headers: Headers;
}

/** The API answered with an error status; `body` is SPEC.md's error body. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly body: ErrorBody;
  readonly method: string;
  readonly url: string;
  /** The gateway's request id (`X-Request-Id`), to quote when reporting a 5xx. */
  readonly requestId: string | undefined;
  /** Seconds from `Retry-After` (429, 503), when sent. */
  readonly retryAfterS: number | undefined;

  constructor(status: number, body: ErrorBody, details: ApiErrorDetails) {
    super(`${details.method} ${details.url} answered ${status} ${body.error}: ${body.message}`);
    this.status = status;
    this.body = body;
    this.method = details.method;
    this.url = details.url;
    this.requestId = details.headers.get('x-request-id') ?? undefined;
    const retryAfter = Number(details.headers.get('retry-after') ?? Number.NaN);
    this.retryAfterS = Number.isFinite(retryAfter) ? retryAfter : undefined;
  }
}

/**
 * The request got no HTTP answer: connection refused or reset, DNS failure, timeout. Whether the
 * server acted is unknown, so retry an unsafe call only with the same `idempotencyKey`.
 */
export class NetworkError extends Error {
  override readonly name = 'NetworkError';
  readonly method: string;
  readonly url: string;

  constructor(method: string, url: string, cause: unknown) {
    const reason = cause instanceof Error ? (cause.cause instanceof Error ? cause.cause.message : cause.message) : String(cause);
    super(`${method} ${url} failed: ${reason}`, { cause });
    this.method = method;
    this.url = url;
  }
}
