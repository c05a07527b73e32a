import type { IncomingMessage } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import pino from 'pino';
import { SERVICE_UNAVAILABLE_RETRY_AFTER_S, errorBody, sendJson } from '@platform/errors';
import { keepHeader } from './answer-head.ts';
import { closeAfterAnswer } from './connection.ts';
import type { Lifecycle } from './health.ts';
import { type RequestFields, type RequestIdSource, enterRequest, loggedTarget, requestIdOf, requestLog, requestTrace } from './http-logger.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { CALLER_GONE_REASON, DEADLINE_MESSAGE, RequestDeadline } from './request-deadline.ts';

/**
 * Headers on every answer of every process. The API answers JSON that is personal and never meant to
 * be rendered, framed, sniffed or cached: a route that wants otherwise (the JWKS may be cached, the
 * docs page needs its inline style) sets its own value, which replaces these.
 */
export const SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = Object.entries({
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
  'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
});

/** The message of an HTTP/1.1 request without a Host header (RFC 9112 section 3.2: a 400). */
export const HOST_MISSING_MESSAGE = 'The Host header is missing (HTTP/1.1 requires it)';
/** The message of a request with more than one Host header line (RFC 9112 section 3.2: a 400). */
export const HOST_REPEATED_MESSAGE = 'The Host header is sent more than once';
/** The message of a Host that is no `uri-host [ ":" port ]` (RFC 9112 section 3.2: a 400). */
export const HOST_INVALID_MESSAGE = 'The Host header is not a host and optional port';

/** The message of an Expect other than 100-continue (RFC 9110 section 10.1.1: a 417). */
export const EXPECTATION_MESSAGE = 'The only expectation supported is Expect: 100-continue';

/**
 * The message of a request line in another HTTP version than 1.1 and 1.0: a 400, as Node's parser answers
 * `HTTP/1.2` or `HTTP/3.0` (RFC 9110 section 15.6.6 allows a 505, but a 5xx says the server failed, and would
 * page whoever watches the error rate for a client's bytes).
 */
export const VERSION_MESSAGE = 'Only HTTP/1.1 and HTTP/1.0 are supported';

/** The message of an HTTP/1.0 request framed by Transfer-Encoding, which that version does not have. */
export const FRAMING_MESSAGE = 'Transfer-Encoding is not part of HTTP/1.0';

/** An Expect header this server cannot meet (anything but `100-continue`), else false. */
function unmetExpectation(req: IncomingMessage): boolean {
  const { expect } = req.headers;
  return expect !== undefined && expect.toLowerCase() !== '100-continue';
}

/**
 * `uri-host [ ":" port ]` (RFC 9110 section 7.2, RFC 3986 section 3.2.2): an IP literal in brackets, or a
 * registered name or IPv4 address (unreserved characters, percent-encodings and sub-delimiters; possibly
 * empty), then an optional port of digits.
 */
const HOST_VALUE = /^(?:\[[0-9A-Fa-f:.]+\]|\[v[0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*)(?::[0-9]*)?$/;

/**
 * What is wrong with the request's Host (RFC 9112 section 3.2), else undefined: none in an HTTP/1.1
 * request, more than one line of it in any (Node keeps the first and drops the others unseen, so a
 * signature and an intermediary could each read another), or a value that is no host and port.
 */
export function hostProblem(req: IncomingMessage): string | undefined {
  const { host } = req.headers;
  if (host === undefined) return req.httpVersionMajor === 1 && req.httpVersionMinor === 1 ? HOST_MISSING_MESSAGE : undefined;
  if (!HOST_VALUE.test(host)) return HOST_INVALID_MESSAGE;
  const raw = req.rawHeaders;
  let lines = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') lines += 1;
  }
  return lines > 1 ? HOST_REPEATED_MESSAGE : undefined;
}

/**
 * Why the request is refused before anything reads it, as its status and message, else undefined: a request
 * line in an HTTP version this server does not speak (Node's parser takes `HTTP/2.0` and `HTTP/0.9` as text,
 * and refuses other versions itself), an HTTP/1.0 request framed by Transfer-Encoding, then its Host
 * (`hostProblem`), then an Expect other than 100-continue.
 */
export function refusalOf(req: IncomingMessage): readonly [number, string] | undefined {
  if (req.httpVersionMajor !== 1) return [400, VERSION_MESSAGE];
  // RFC 9112 section 6.1: its framing is faulty, whatever Content-Length says (Node's parser reads it chunked).
  if (req.httpVersionMinor === 0 && req.headers['transfer-encoding'] !== undefined) return [400, FRAMING_MESSAGE];
  const badHost = hostProblem(req);
  if (badHost !== undefined) return [400, badHost];
  return unmetExpectation(req) ? [417, EXPECTATION_MESSAGE] : undefined;
}

/** The 408 of a request whose body had not all arrived by the deadline. */
export const BODY_LATE_MESSAGE = 'Request not received in time';

/** Paths polled by orchestrators and scrapers: not worth a line each. */
const QUIET_PATHS = /^\/(health\/(live|ready)|metrics)(\?|$)/;

export interface RequestEnvelopeOptions {
  logger: Logger;
  /** Counts and times every finished answer; none on a process's metrics-only port. */
  metrics?: Pick<Metrics, 'observeRequest'>;
  /**
   * The incoming X-Request-Id this process may take as the request's id (a service: the one the gateway's
   * assertion covers); omitted, every request gets an id of the process's own.
   */
  requestIdFrom?: RequestIdSource;
  /**
   * The outer deadline of every request (REQUEST_DEADLINE_MS): when no answer has started after it, a 503
   * in the error shape, whatever the handler is still waiting for. Inner timeouts (statement, command,
   * upstream) should fire first; this is the guarantee that a client never waits longer. None when omitted.
   */
  deadlineMs?: number;
  /**
   * When the request must have been answered, or have changed nothing, by (Unix ms), as a caller this process
   * trusts says (a service: the gateway, under its assertion, `gatewayDeadline`: a margin before its 504);
   * undefined when none says. The request's deadline then ends there if that is sooner than `deadlineMs`, and
   * a request read after it (it waited in a stalled process) is answered 503 at once, with nothing done: its
   * caller has answered it already, and may be retrying it.
   */
  deadlineFrom?: (req: IncomingMessage) => number | undefined;
  /** While draining, keep-alive clients are told to reconnect elsewhere (`Connection: close`). */
  lifecycle?: Pick<Lifecycle, 'draining'>;
}

/**
 * What every request of every process goes through first, as one middleware with one `close` hook (issue
 * 44: a layer, a listener and a closure each cost every request their allocations):
 * - its id (`requestIdOf`) and the request log (`requestLog`, `currentRequest`);
 * - the id echoed in X-Request-Id and the security headers; behind the gateway (the id came under its
 *   assertion) only `Cache-Control`: the gateway passes no other of them on, and answers its client with its
 *   own X-Request-Id, the id this process logs the request under;
 * - the deadline's 503, and `Connection: close` while draining;
 * - the 400 of a request line in another HTTP version than 1.1 and 1.0, the 400 of a request whose Host is
 *   missing, repeated or invalid (`hostProblem`), then the 417 of an Expect other than 100-continue (the server
 *   leaves them to the envelope, so that the answer is in the error shape: `listen`);
 * - at `close` (every answer, finished or not, ends with it): the request metrics of a finished answer and
 *   one log line per request (not for probes and scrapes) with its id, trace id, method, URL, status and
 *   duration. Requests are described by allow-list (no headers, no bodies, no query values but the
 *   allow-listed ones: `loggedTarget`), so credentials and signatures cannot reach the log by accident. Its
 *   level: `error` for a fault (a 5xx with a cause, which the line carries, or any 5xx but 503 without one: a
 *   500, 502 or 504 relayed from upstream); `warn` for a 503 without a cause, a refusal the process chose or
 *   relayed (busy, starting, draining, a deadline, a Redis loss's recovery, a dependency down: the error
 *   handler hands no cause on for it) with its `reason` when it was thrown here, and for a 4xx; `info` otherwise, and for a request whose client left before any answer was
 *   written (`GET aborted before an answer`, no status; a fault the request ends in afterwards gets a line of its
 *   own at error, `GET failed after its client left`). A line never carries a stack that names no cause.
 *
 * The line of an answer below 500 is written in a fixed shape (`accessLine`): it holds nothing but the
 * allow-listed fields, in which pino's redaction (its wildcard paths cost ~25 µs a line) could find
 * nothing. The line of a failure carries the error, and `requestLog` carries whatever a handler passes
 * it, so both keep the redaction of `createLogger`.
 */
export function requestEnvelope(options: RequestEnvelopeOptions): RequestHandler {
  const { logger, metrics, requestIdFrom, deadlineMs, deadlineFrom, lifecycle } = options;
  const access = accessLine(logger);
  return (req, res, next) => {
    const started = performance.now();
    const { id, clientRequestId, vouched } = requestIdOf(req, requestIdFrom);
    if (vouched) keepHeader(res, 'Cache-Control', 'no-store');
    else {
      keepHeader(res, 'X-Request-Id', id);
      for (const [name, value] of SECURITY_HEADERS) keepHeader(res, name, value);
    }
    if (lifecycle?.draining === true) closeAfterAnswer(res, req);
    const fields: RequestFields = { id, clientRequestId, method: req.method, url: loggedTarget(req.originalUrl), remoteAddress: req.socket.remoteAddress };
    let deadline: RequestDeadline | undefined;
    let timer: NodeJS.Timeout | undefined;
    let budgetMs = deadlineMs;
    const callerDeadline = budgetMs === undefined ? undefined : deadlineFrom?.(req);
    if (budgetMs !== undefined && callerDeadline !== undefined) budgetMs = Math.min(budgetMs, callerDeadline - Date.now());
    if (budgetMs !== undefined) {
      deadline = new RequestDeadline(started + budgetMs, res);
      if (budgetMs > 0) timer = setTimeout(answerLate, budgetMs, req, res, deadline, budgetMs, logger);
    }
    const quiet = QUIET_PATHS.test(req.url);
    res.once('close', () => {
      if (timer !== undefined) clearTimeout(timer);
      const status = res.statusCode;
      const elapsedMs = performance.now() - started;
      if (metrics !== undefined && res.writableFinished) metrics.observeRequest(req, status, elapsedMs / 1000);
      if (quiet) return;
      const traceId = requestTrace(req).traceId;
      const responseTime = Math.round(elapsedMs);
      // The error handler leaves a 5xx's cause here, so the line carries its stack; or the reason of a 503
      // the process chose (busy, starting, draining), which is no fault.
      const { err, refusal } = res as { err?: unknown; refusal?: string };
      if (!res.headersSent && err === undefined) {
        // The client left before any answer was written: there is no status to tell (statusCode is only the default).
        logger.info({ req: fields, traceId, responseTime }, `${req.method} aborted before an answer`);
        // The work goes on (a forwarded request waits for its upstream): a fault it ends in has no line to go
        // on any more, so the error handler writes one of its own.
        (res as { lateFault?: (fault: unknown) => void }).lateFault = (fault) =>
          logger.error({ req: fields, traceId, responseTime: Math.round(performance.now() - started), err: fault }, `${req.method} failed after its client left`);
      } else if (err !== undefined || (status >= 500 && status !== 503)) {
        logger.error({ req: fields, traceId, res: { statusCode: status }, responseTime, err }, `${req.method} ${status}`);
      } else if (status === 503) {
        logger.warn({ req: fields, traceId, res: { statusCode: status }, responseTime, reason: refusal }, `${req.method} ${status}`);
      } else {
        access(status >= 400 ? 'warn' : 'info', fields, traceId, status, responseTime);
      }
    });
    if (budgetMs !== undefined && budgetMs <= 0) {
      // Read after its caller stopped waiting: nothing of it runs, and its body is not read.
      deadline?.expire();
      closeAfterAnswer(res, req);
      enterRequest(req, logger, fields, deadline, () => answerDeadline(req, res, CALLER_GONE_REASON));
      return;
    }
    const refusal = refusalOf(req);
    if (refusal !== undefined) {
      // Nothing further runs for it; the connection is not kept (its body, if any, was not invited).
      const [status, message] = refusal;
      closeAfterAnswer(res, req);
      enterRequest(req, logger, fields, deadline, () => sendJson(req, res, status, errorBody(status, message, req.originalUrl, [message])));
      return;
    }
    enterRequest(req, logger, fields, deadline, next);
  };
}

/**
 * The deadline passed: a 503 unless an answer started already (a handler finishing later finds it sent), or
 * a 408 while the request itself has not all arrived (its body comes too slowly, or never: the client's
 * doing, not a fault of this server; the connection is not kept, its stream not at a message boundary).
 * Neither when a change of the request committed or is committing (`RequestDeadline.expire`): the request's
 * own answer then says what was done, so that the deadline's answer always means nothing was.
 * Plain `node:http` (`sendJson`), as the whole envelope is: it also runs in front of Express (the gateway).
 */
function answerLate(req: Request, res: Response, deadline: RequestDeadline, deadlineMs: number, logger: Logger): void {
  if (res.headersSent) return;
  if (!deadline.expire()) {
    requestLog(req, logger).warn({ deadlineMs }, 'request deadline exceeded while its change commits or after it committed; the answer waits for the change');
    return;
  }
  if (!req.complete) {
    requestLog(req, logger).info({ deadlineMs }, 'request body not received by the deadline; answered 408');
    closeAfterAnswer(res, req);
    sendJson(req, res, 408, errorBody(408, BODY_LATE_MESSAGE, req.originalUrl, [BODY_LATE_MESSAGE]));
    return;
  }
  requestLog(req, logger).warn({ deadlineMs }, 'request deadline exceeded; answered 503');
  answerDeadline(req, res, DEADLINE_MESSAGE);
}

/** The deadline's 503, with `reason` for the request's line (the error handler's `res.refusal`). */
function answerDeadline(req: Request, res: Response, reason: string): void {
  // `messages` always: the station operations require it, and it is optional everywhere else.
  // A retry may well be served (whatever was slow recovers), so the answer says when, as every 503 does.
  res.setHeader('Retry-After', String(SERVICE_UNAVAILABLE_RETRY_AFTER_S));
  (res as { refusal?: string }).refusal = reason;
  sendJson(req, res, 503, errorBody(503, DEADLINE_MESSAGE, req.originalUrl, [DEADLINE_MESSAGE]));
}

type AccessLine = (level: 'info' | 'warn', fields: RequestFields, traceId: string, status: number, responseTime: number) => void;

/** What pino keeps of a logger for its lines (`pino.symbols`, pino's documented hooks for integrations). */
interface PinoInternals {
  [pino.symbols.lsCacheSym]?: Record<number, string>;
  [pino.symbols.chindingsSym]?: string;
  [pino.symbols.timeSym]?: () => string;
  [pino.symbols.streamSym]?: { write(line: string): void; [pino.symbols.needsMetadataGsym]?: boolean };
  [pino.symbols.asJsonSym]?: (obj: object, msg: string, level: number, time: string) => string;
  [pino.symbols.mixinSym]?: unknown;
  [pino.symbols.hooksSym]?: { streamWrite?: unknown };
}

const LEVELS = { info: 30, warn: 40 } as const;

/**
 * An access line writer for `logger`: the line pino would write for these fields (the same JSON, key for
 * key), made from its fixed shape by string concatenation and handed to the logger's stream, not built
 * by pino's generic pass over an object (a serializer lookup and a stringify per field). The fixed shape
 * is checked against pino's own output once, here; a logger whose line it does not reproduce (another
 * pino, other formatters) is written through pino.
 */
function accessLine(logger: Logger): AccessLine {
  const plain = logger.child({}, { redact: [] });
  const viaPino: AccessLine = (level, fields, traceId, status, responseTime) =>
    plain[level]({ req: fields, traceId, res: { statusCode: status }, responseTime }, `${fields.method} ${status}`);
  const internals = plain as unknown as PinoInternals;
  const levels = internals[pino.symbols.lsCacheSym];
  const bindings = internals[pino.symbols.chindingsSym];
  const time = internals[pino.symbols.timeSym];
  const stream = internals[pino.symbols.streamSym];
  const asJson = internals[pino.symbols.asJsonSym];
  if (levels === undefined || bindings === undefined || time === undefined || stream === undefined || asJson === undefined) return viaPino;
  // What pino's write does besides the JSON: a mixin's fields, a hook on the written text, a multistream's metadata.
  if (internals[pino.symbols.mixinSym] || internals[pino.symbols.hooksSym]?.streamWrite || stream[pino.symbols.needsMetadataGsym] === true) return viaPino;
  const format = (level: 'info' | 'warn', fields: RequestFields, traceId: string, status: number, responseTime: number, at: string): string =>
    `${levels[LEVELS[level]]}${at}${bindings},"req":{"id":${JSON.stringify(fields.id)}${
      fields.clientRequestId === undefined ? '' : `,"clientRequestId":${JSON.stringify(fields.clientRequestId)}`
    },"method":${JSON.stringify(fields.method)},"url":${JSON.stringify(fields.url)}${
      fields.remoteAddress === undefined ? '' : `,"remoteAddress":${JSON.stringify(fields.remoteAddress)}`
    }},"traceId":${JSON.stringify(traceId)},"res":{"statusCode":${status}},"responseTime":${responseTime},"msg":"${fields.method} ${status}"}\n`;
  // The probe: odd characters where the request puts text, both optional fields present and absent.
  const probes: Array<[RequestFields, number]> = [
    [{ id: 'a-1', clientRequestId: 'c.2', method: 'GET', url: '/p?q="\\\u00e7\u2028', remoteAddress: '::1' }, 200],
    [{ id: 'a-2', clientRequestId: undefined, method: 'POST', url: '/p', remoteAddress: undefined }, 404],
  ];
  for (const [fields, status] of probes) {
    const level = status >= 400 ? 'warn' : 'info';
    const expected = asJson.call(plain, { req: fields, traceId: '0af7651916cd43dd8448eb211c80319c', res: { statusCode: status }, responseTime: 3 }, `${fields.method} ${status}`, LEVELS[level], ',"time":"t"');
    if (format(level, fields, '0af7651916cd43dd8448eb211c80319c', status, 3, ',"time":"t"') !== expected) return viaPino;
  }
  return (level, fields, traceId, status, responseTime) => {
    if (!plain.isLevelEnabled(level)) return;
    // The method is one of Node's parser's tokens, so it needs no escaping in the message either.
    stream.write(format(level, fields, traceId, status, responseTime, time()));
  };
}
