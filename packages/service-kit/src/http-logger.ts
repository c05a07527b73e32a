import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { SpanContext } from '@opentelemetry/api';
import type { Logger } from './logger.ts';
import type { RequestDeadline } from './request-deadline.ts';
import { type TraceContext, activeSpanContext, traceContextOf } from './trace-context.ts';

declare module 'http' {
  interface IncomingMessage {
    /** The request id (X-Request-Id), set by the request envelope (`enterRequest`). */
    id?: string;
  }
}

/** Where `enterRequest` leaves what `requestLog` needs: a plain property, set the same way on every request. */
const REQUEST_LOG = Symbol('request log');

interface RequestLogState {
  logger: Logger;
  fields: RequestFields;
  child: Logger | undefined;
  /** The SDK's server span, taken while the request's own context is active (undefined without the SDK). */
  sdkSpan: SpanContext | undefined;
  /** Worked out on first use: most requests need it only for their one line. */
  trace: TraceContext | undefined;
}

type WithRequestLog = IncomingMessage & { [REQUEST_LOG]?: RequestLogState };

/** The request whose handling is running right now, wherever its callbacks and promises lead. */
export interface RequestContext {
  /** The request id (X-Request-Id). */
  id: string;
  /** The logger of the process (or, in the embedded stack, of the deployable) that took the request. */
  logger: Logger;
  /** The request itself, for `currentRequestLog`. */
  req: IncomingMessage;
  /** Its deadline (REQUEST_DEADLINE_MS), which its transactions keep (`deadlineTransaction`); none when the process sets none. */
  deadline: RequestDeadline | undefined;
}

const requestContext = new AsyncLocalStorage<RequestContext>();

/**
 * The request being handled where this is called (in any callback or promise descending from its
 * middlewares), or undefined outside of one. The crash handler reads it to name the failed request.
 */
export function currentRequest(): RequestContext | undefined {
  return requestContext.getStore();
}

/** What an incoming X-Request-Id must look like to be taken or logged at all. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Which incoming X-Request-Id a process takes as the id of the request: a service, the one the gateway's
 * assertion covers (`gatewayRequestId`); undefined for any other.
 */
export type RequestIdSource = (req: IncomingMessage) => string | undefined;

/**
 * The request id of this request (echoed in X-Request-Id): the one `from` vouches for when it is
 * well-formed (`vouched`), else a new UUID, so a caller never chooses the id its request is logged and
 * audited under. An X-Request-Id the caller sent and `from` did not vouch for is returned as
 * `clientRequestId`, when well-formed (at most 128 characters of `[A-Za-z0-9._:-]`), only to be logged
 * beside the id.
 */
export function requestIdOf(req: IncomingMessage, from?: RequestIdSource): { id: string; clientRequestId: string | undefined; vouched: boolean } {
  const incoming = req.headers['x-request-id'];
  const wellFormed = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : undefined;
  const vouched = from?.(req);
  if (vouched !== undefined && REQUEST_ID.test(vouched)) return { id: vouched, clientRequestId: wellFormed === vouched ? undefined : wellFormed, vouched: true };
  return { id: randomUUID(), clientRequestId: wellFormed, vouched: false };
}

/** How every line about a request describes it: an allow-list, never headers or bodies. */
export interface RequestFields {
  id: string;
  /** The caller's own X-Request-Id when it sent one that was not taken (the gateway never takes one). */
  clientRequestId: string | undefined;
  method: string;
  /** The request target as `loggedTarget` shows it: no query value but the allow-listed ones. */
  url: string;
  remoteAddress: string | undefined;
}

/**
 * The query parameters whose values a log line shows: ids, page bounds, filters and coordinates, never a
 * secret or a person's data. Every other value (a token or password a client put in a URL, a search by
 * username, a parameter no operation knows) is shown as `[redacted]`, whichever process logs it: the gateway
 * forwards what it does not know to the service that refuses it. The logging tests hold every query
 * parameter of the OpenAPI documents to this list or to the list of those redacted on purpose.
 */
export const LOGGED_QUERY_VALUES: ReadonlySet<string> = new Set(['limit', 'cursor', 'userId', 'subjectUserId', 'actorUserId', 'type', 'since', 'until', 'status', 'role', 'latitude', 'longitude']);

const REDACTED = '[redacted]';

/**
 * A listed parameter's value as the log shows it: what its values are made of (digits, ids, cursors, times,
 * coordinates). Anything else (an escape, `;`, `=`, `?`, a long text) is how a secret would ride along.
 */
const SHOWN_VALUE = /^[\w.:+-]{0,128}$/;

/**
 * The request target as every line about the request shows it: the path as received, each query parameter
 * by its name as received, its value only when `LOGGED_QUERY_VALUES` names it and the value is made of what
 * such values are (`SHOWN_VALUE`); a part with no `=` is a value too, and a fragment (which a client should
 * never send) is `#[redacted]`. A target with neither `?` nor `#` is returned as it is.
 */
export function loggedTarget(target: string): string {
  const hash = target.indexOf('#');
  const end = hash === -1 ? target.length : hash;
  const question = target.indexOf('?');
  if (question === -1 && hash === -1) return target;
  const fragment = hash === -1 ? '' : `#${REDACTED}`;
  if (question === -1 || question > end) return target.slice(0, end) + fragment;
  const parts = target.slice(question + 1, end).split('&');
  for (let i = 0; i < parts.length; i += 1) {
    const part = parts[i] as string;
    const equals = part.indexOf('=');
    const name = equals === -1 ? part : part.slice(0, equals);
    if (part === '') continue;
    if (LOGGED_QUERY_VALUES.has(decodedName(name)) && (equals === -1 || SHOWN_VALUE.test(part.slice(equals + 1)))) continue;
    parts[i] = equals === -1 ? REDACTED : `${name}=${REDACTED}`;
  }
  return `${target.slice(0, question)}?${parts.join('&')}${fragment}`;
}

/** A query parameter's name as a URL parser reads it (`+` a space, percent-decoded), or as sent when it is not valid. */
function decodedName(name: string): string {
  if (!name.includes('%') && !name.includes('+')) return name;
  try {
    return decodeURIComponent(name.replaceAll('+', ' '));
  } catch {
    return name;
  }
}

/**
 * The W3C trace context of `req` (CONTRACT.md part 12): OpenTelemetry's span when the SDK runs, else the
 * caller's valid `traceparent` continued, else a new trace. The same object for the whole request.
 */
export function requestTrace(req: IncomingMessage): TraceContext {
  const state = (req as WithRequestLog)[REQUEST_LOG];
  if (state === undefined) return traceContextOf(req.headers.traceparent, activeSpanContext());
  return (state.trace ??= traceContextOf(req.headers.traceparent, state.sdkSpan));
}

/**
 * The logger for what is logged while handling `req`: a child of the process logger whose every line
 * carries the request's id, method, URL and address, made on first use (most requests never log
 * anything but their line). `fallback` for a request the request envelope did not see. A function, not a
 * `req.log` accessor: defining an accessor on every request cost ~15 µs of CPU per answer (the request
 * object left V8's fast property layout).
 */
export function requestLog(req: IncomingMessage, fallback: Logger): Logger {
  const state = (req as WithRequestLog)[REQUEST_LOG];
  if (state === undefined) return fallback;
  return (state.child ??= state.logger.child({ req: state.fields, traceId: requestTrace(req).traceId }));
}

/**
 * `requestLog` of the request being handled where this is called, found in the async context: for code
 * that writes a line about the request but is not handed it (a mailer below the use case, work that goes
 * on after the answer), so the line carries the request's id and trace id all the same. `fallback` outside
 * of a request: start, shutdown, timers of the process.
 */
export function currentRequestLog(fallback: Logger): Logger {
  const req = requestContext.getStore()?.req;
  return req === undefined ? fallback : requestLog(req, fallback);
}

/**
 * Makes `req` the request that `requestLog`, `requestTrace` and `currentRequest` describe, with `fields` on
 * every line about it, and runs `next` in its async context. The request envelope (request-envelope.ts)
 * calls it first thing for every request.
 */
export function enterRequest(req: IncomingMessage, logger: Logger, fields: RequestFields, deadline: RequestDeadline | undefined, next: () => void): void {
  req.id = fields.id;
  (req as WithRequestLog)[REQUEST_LOG] = { logger, fields, child: undefined, sdkSpan: activeSpanContext(), trace: undefined };
  requestContext.run({ id: fields.id, logger, req, deadline }, next);
}
