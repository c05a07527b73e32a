import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { Dispatcher, Pool as UndiciPool } from 'undici';
import { BadGatewayError, GatewayTimeoutError, SERVICE_UNAVAILABLE_RETRY_AFTER_S, parseUpstreamError } from '@platform/errors';
import { startClientSpan } from '@platform/service-kit';
import { clientResponseHeaders } from './forwarded-headers.ts';

/**
 * undici's pool alone: the package's index also loads fetch, WebSocket, its caches and mocks, ~14 MB of
 * resident memory the gateway never uses (its peak is a target, bench/README.md).
 */
const Pool = createRequire(import.meta.url)('undici/lib/dispatcher/pool.js') as typeof UndiciPool;

/** How one exchange with an upstream ended: the status it answered, or no answer at all. */
export type UpstreamOutcome = number | 'timeout' | 'unreachable';

/** One request for the upstream: everything is decided before it is sent. */
export interface UpstreamExchange {
  method: string;
  /** Path and query as received. */
  target: string;
  /** The complete header set (allow-listed client headers plus the gateway's own). */
  headers: Record<string, string>;
  /** The verified body, sent from the buffer it was read into. */
  body: Buffer;
  /** The request path, for the error shape of an answer re-shaped here. */
  path: string;
}

/** Sends checked requests to one upstream over a pool of kept-alive connections, and relays the answer. */
export interface UpstreamClient {
  /** The upstream's name, for metrics and logs. */
  readonly name: string;
  /** How long a silence of the upstream lasts before the answer is a 504 (UPSTREAM_TIMEOUT_MS). */
  readonly timeoutMs: number;
  /**
   * Sends `exchange` and relays the answer to `res`. Resolves with the upstream's status as soon as it has
   * answered (before the body is relayed); rejects with a 502 (`BadGatewayError`) or 504
   * (`GatewayTimeoutError`) when it did not answer. `outcome` hears how the exchange ended, once.
   */
  send(exchange: UpstreamExchange, res: ServerResponse, outcome: (outcome: UpstreamOutcome) => void): Promise<number>;
  /**
   * Sends `exchange` and reads the whole answer (the station cache stores it, CONTRACT.md part 17); rejects
   * as `send` does when the upstream did not answer or broke off.
   */
  read(exchange: UpstreamExchange, outcome: (outcome: UpstreamOutcome) => void): Promise<UpstreamAnswer>;
  /** Writes an answer `read` gave to the client, as `send` would have relayed it (a foreign error page re-shaped). */
  answer(exchange: UpstreamExchange, answer: UpstreamAnswer, res: ServerResponse): void;
  /** Closes the idle pooled connections (shutdown). */
  close(): void;
}

/** An upstream's answer read whole. */
export interface UpstreamAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface UpstreamClientOptions {
  name: string;
  target: string;
  /** Longest silence from the upstream before the gateway answers 504. */
  timeoutMs: number;
  /** Every error body re-shaped from this upstream carries `messages` (the station rule, CONTRACT.md part 7). */
  alwaysMessages?: boolean;
}

/**
 * Pooled sockets are dropped after this much idleness: below Node's default server keepAliveTimeout
 * (5 s), so the gateway never reuses a socket the upstream is closing at that very moment.
 */
const IDLE_SOCKET_MS = 4000;
const JSON_TYPE = /^application\/(.+\+)?json\b/i;

/**
 * Answers an upstream error that is not JSON (a load balancer's HTML page) in the error shape: every
 * error body a client sees has the contract's shape, even one made by something in between. Its bytes
 * are drained unread: a body that does not say it is JSON gives the shape nothing but its status.
 */
function answerForeignError(status: number, retryAfter: string, path: string, res: ServerResponse, alwaysMessages: boolean): void {
  const body = parseUpstreamError(status, undefined, path);
  if (alwaysMessages) body.messages ??= [body.message];
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  // Every 503 says when to retry (CONTRACT.md part 13): the upstream's delay in seconds, else the gateway's.
  if (status === 503) headers['retry-after'] = /^\d{1,6}$/.test(retryAfter) ? retryAfter : String(SERVICE_UNAVAILABLE_RETRY_AFTER_S);
  res.writeHead(status, headers).end(JSON.stringify(body));
}

const ignore = (): void => undefined;


/** What becomes of an answer once its head arrived: where its chunks go, and how it ends. */
interface AnswerSink {
  /** The head of the final answer; returns whether the body is wanted (else it is drained). */
  head(status: number, headers: IncomingHttpHeaders, controller: Dispatcher.DispatchController): boolean;
  data(chunk: Buffer, controller: Dispatcher.DispatchController): void;
  end(): void;
  /** The answer broke off after its head. */
  broke(): void;
}

/**
 * undici's pool (`dispatch`: no ClientRequest, IncomingMessage or pipe per exchange; bench/README.md, limit
 * C′) on kept-alive connections. The body was read whole for the digest, so it is sent from that buffer with
 * the headers the checks decided. The answer's status is known before its body is relayed, and its head is
 * written once; its chunks go to the client as they come, the upstream paused while the client's socket is
 * full. A relay that breaks off cuts the client's connection; a client that hangs up mid-relay frees the
 * upstream socket; a client that hangs up before the answer does not cancel the exchange (its status still
 * decides the idempotency key).
 */
export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const url = new URL(options.target);
  const pool = new Pool(url.origin, {
    // Idle sockets are dropped below Node's server keepAliveTimeout (5 s), so the gateway never reuses a
    // socket the upstream is closing at that very moment; an upstream's shorter Keep-Alive hint wins.
    keepAliveTimeout: IDLE_SOCKET_MS,
    keepAliveMaxTimeout: IDLE_SOCKET_MS,
    // The silence timer is the exchange's own (below): undici checks its timeouts about once a second, and
    // a 400 ms UPSTREAM_TIMEOUT_MS would fire after 1 s.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  const alwaysMessages = options.alwaysMessages === true;

  /**
   * One exchange: resolves with the final status once the head arrived, rejects with a 502 or 504 before it.
   * A GET or HEAD whose connection the upstream closed before any answer is sent once more (`sentAgain`).
   */
  const dispatch = (exchange: UpstreamExchange, outcome: (outcome: UpstreamOutcome) => void, sink: AnswerSink, again = false): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      // With tracing on, the client span, whose traceparent goes upstream (service-kit's http-spans.ts).
      const span = startClientSpan(exchange.method, url, exchange.target, exchange.headers);
      let settled = false;
      let wanted = false;
      let controller: Dispatcher.DispatchController | undefined;
      // A silence of the upstream, however long the exchange already took, ends in a 504: one timer per
      // exchange, pushed back by the head and every chunk of the answer.
      let silent = false;
      const silence = setTimeout(() => {
        silent = true;
        controller?.abort(new GatewayTimeoutError());
      }, options.timeoutMs);
      const fail = (err: Error): void => {
        if (settled) return;
        settled = true;
        const timedOut = err instanceof GatewayTimeoutError;
        span?.end(err);
        if (!again && sentAgain(exchange.method, err)) {
          dispatch(exchange, outcome, sink, true).then(resolve, reject);
          return;
        }
        outcome(timedOut ? 'timeout' : 'unreachable');
        reject(timedOut ? err : new BadGatewayError(undefined, { cause: err }));
      };
      pool.dispatch(
        { method: exchange.method, path: exchange.target, headers: exchange.headers, body: exchange.body.length > 0 ? exchange.body : null },
        {
          onRequestStart(started) {
            controller = started;
            if (silent) started.abort(new GatewayTimeoutError());
          },
          onResponseStart(started, status, headers) {
            if (status < 200) {
              // 100 and 103 are informational: the final answer follows. A 101 is another protocol, which no
              // client asked for: a 502 at once rather than a socket nobody reads.
              if (status === 101) {
                fail(new Error('the upstream switched protocols (101)'));
                started.abort(new Error('the upstream switched protocols (101)'));
              }
              return;
            }
            silence.refresh();
            settled = true;
            span?.end(status);
            outcome(status);
            wanted = sink.head(status, headers as IncomingHttpHeaders, started);
            resolve(status);
          },
          onResponseData(started, chunk) {
            silence.refresh();
            if (wanted) sink.data(chunk, started);
          },
          onResponseEnd() {
            clearTimeout(silence);
            if (wanted) sink.end();
          },
          onResponseError(_started, err) {
            clearTimeout(silence);
            if (!settled) fail(err);
            else if (wanted) sink.broke();
          },
        },
      );
    });

  return {
    name: options.name,
    timeoutMs: options.timeoutMs,
    send(exchange, res, outcome) {
      const clientGone = (controller: Dispatcher.DispatchController) => () => controller.abort(new Error('the client went away'));
      let onClose: (() => void) | undefined;
      return dispatch(exchange, outcome, {
        head(status, headers, controller) {
          // Someone answered already (the request deadline) or the client is gone: the answer is drained to
          // free its pooled socket.
          if (res.headersSent || res.destroyed) return false;
          if (status >= 400 && !JSON_TYPE.test(headerText(headers['content-type']))) {
            answerForeignError(status, headerText(headers['retry-after']), exchange.path, res, alwaysMessages);
            return false;
          }
          res.writeHead(status, clientResponseHeaders(headers));
          // A client gone mid-relay frees the upstream socket.
          onClose = clientGone(controller);
          res.once('close', onClose);
          return true;
        },
        data(chunk, controller) {
          if (!res.write(chunk)) {
            controller.pause();
            res.once('drain', () => controller.resume());
          }
        },
        end() {
          if (onClose !== undefined) res.off('close', onClose);
          res.end();
        },
        broke() {
          // An answer that breaks off midway cannot be finished: the client's connection is cut rather than
          // left waiting for the rest.
          if (onClose !== undefined) res.off('close', onClose);
          res.destroy();
        },
      });
    },
    read(exchange, outcome) {
      return new Promise<UpstreamAnswer>((resolve, reject) => {
        const chunks: Buffer[] = [];
        let answer: Omit<UpstreamAnswer, 'body'> | undefined;
        dispatch(exchange, outcome, {
          head(status, headers) {
            answer = { status, headers };
            return true;
          },
          data: (chunk) => void chunks.push(chunk),
          end: () => resolve({ ...(answer as Omit<UpstreamAnswer, 'body'>), body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) }),
          broke: () => reject(new BadGatewayError(undefined, { cause: new Error('the upstream broke off its answer') })),
        }).catch(reject);
      });
    },
    answer(exchange, answer, res) {
      if (answer.status >= 400 && !JSON_TYPE.test(headerText(answer.headers['content-type']))) {
        answerForeignError(answer.status, headerText(answer.headers['retry-after']), exchange.path, res, alwaysMessages);
        return;
      }
      res.writeHead(answer.status, clientResponseHeaders(answer.headers)).end(answer.body);
    },
    close() {
      void pool.destroy().catch(ignore);
    },
  };
}

/** How undici and the socket say that the other side closed the connection. */
const CLOSED_BY_UPSTREAM = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/**
 * Whether a request that got no answer goes once more, on another connection: only a GET or HEAD (safe, RFC
 * 9110 section 9.2.1: sending it again changes nothing), and only when the upstream closed the connection
 * under it. That happens to a kept-alive connection the upstream closes as the request goes out (it
 * drains for a restart and closes its idle connections; it crashed): the next connection reaches a
 * replica that answers, or is refused at once. A timeout, a refused connection or any other method is
 * answered 502 or 504 as it is: a POST may have been carried out.
 */
function sentAgain(method: string, err: Error): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && CLOSED_BY_UPSTREAM.has(code);
}

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}
