import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SpanContext } from '@opentelemetry/api';
import type { RequestHandler } from 'express';
import type { Logger } from './logger.ts';
import { type TraceContext, activeSpanContext, traceContextOf } from './trace-context.ts';

declare module 'http' {
  interface IncomingMessage {
    /** The request id (X-Request-Id), set by `httpLogger`. */
    id?: string;
  }
}

/** Where `httpLogger` leaves what `requestLog` needs: a plain property, set the same way on every request. */
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

/** Paths polled by orchestrators and scrapers: not worth a line each. */
const QUIET_PATHS = /^\/(health\/(live|ready)|metrics)(\?|$)/;

/**
 * Which incoming X-Request-Id a process takes as the id of the request: a service, the one the gateway's
 * assertion covers (`gatewayRequestId`); undefined for any other.
 */
export type RequestIdSource = (req: IncomingMessage) => string | undefined;

/**
 * The request id of this request, echoed in X-Request-Id: the one `from` vouches for when it is
 * well-formed, else a new UUID, so a caller never chooses the id its request is logged and audited under.
 * An X-Request-Id the caller sent and `from` did not vouch for is returned as `clientRequestId`, when
 * well-formed (at most 128 characters of `[A-Za-z0-9._:-]`), only to be logged beside the id.
 */
export function assignRequestId(req: IncomingMessage, res: ServerResponse, from?: RequestIdSource): { id: string; clientRequestId: string | undefined } {
  const vouched = from?.(req);
  const incoming = req.headers['x-request-id'];
  const wellFormed = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : undefined;
  const id = vouched !== undefined && REQUEST_ID.test(vouched) ? vouched : randomUUID();
  res.setHeader('X-Request-Id', id);
  return { id, clientRequestId: wellFormed === id ? undefined : wellFormed };
}

/** How every line about a request describes it: an allow-list, never headers or bodies. */
interface RequestFields {
  id: string;
  /** The caller's own X-Request-Id when it sent one that was not taken (the gateway never takes one). */
  clientRequestId: string | undefined;
  method: string;
  url: string;
  remoteAddress: string | undefined;
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
 * anything but their line). `fallback` for a request `httpLogger` did not see.
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
 * One log line per request with its id, trace id, method, URL, status and duration. The id is the
 * process's own unless `requestIdFrom` vouches for the incoming one (`assignRequestId`). Requests are described by
 * allow-list (no headers, no bodies), so credentials and signatures cannot reach the log by accident;
 * `requestLog(req)` carries that description for everything logged while handling it.
 *
 * The line of an answer below 500 goes through a child without redaction: it holds nothing but the
 * allow-listed fields, in which the redaction pass (its wildcard paths cost ~25 µs a line, as much as
 * a whole station lookup should) can find nothing. The line of a failure carries the error, and
 * `requestLog` carries whatever a handler passes it, so both keep the redaction of `createLogger`.
 * The request logger is reached through a function, not a `req.log` accessor: defining an accessor on
 * every request cost ~15 µs of CPU per answer (the request object left V8's fast property layout).
 */
export function httpLogger(logger: Logger, requestIdFrom?: RequestIdSource): RequestHandler {
  const access = logger.child({}, { redact: [] });
  return (req, res, next) => {
    const started = Date.now();
    const { id, clientRequestId } = assignRequestId(req, res, requestIdFrom);
    const fields: RequestFields = { id, clientRequestId, method: req.method, url: req.originalUrl, remoteAddress: req.socket.remoteAddress };
    req.id = fields.id;
    (req as WithRequestLog)[REQUEST_LOG] = { logger, fields, child: undefined, sdkSpan: activeSpanContext(), trace: undefined };
    if (!QUIET_PATHS.test(req.url)) {
      const done = () => {
        // The error handler leaves a 5xx's cause here, so the line carries its stack.
        const err = (res as { err?: unknown }).err;
        const line = { req: fields, traceId: requestTrace(req).traceId, res: { statusCode: res.statusCode }, responseTime: Date.now() - started };
        const message = `${req.method} ${res.statusCode}`;
        if (err !== undefined || res.statusCode >= 500) logger.error({ ...line, err: err ?? new Error(`failed with status code ${res.statusCode}`) }, message);
        else if (res.statusCode >= 400) access.warn(line, message);
        else access.info(line, message);
      };
      // `close` follows every answer, finished or not (the client went away first): one listener, not two.
      res.once('close', done);
    }
    requestContext.run({ id: fields.id, logger, req }, next);
  };
}
