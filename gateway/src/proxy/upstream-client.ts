import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { type Dispatcher, Pool } from 'undici';
import { BadGatewayError, GatewayTimeoutError, SERVICE_UNAVAILABLE_RETRY_AFTER_S, parseUpstreamError } from '@platform/errors';
import { startClientSpan } from '@platform/service-kit';
import { clientResponseHeaders } from './forwarded-headers.ts';

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
  /**
   * Sends `exchange` and relays the answer to `res`. Resolves with the upstream's status as soon as it has
   * answered (before the body is relayed); rejects with a 502 (`BadGatewayError`) or 504
   * (`GatewayTimeoutError`) when it did not answer. `outcome` hears how the exchange ended, once.
   */
  send(exchange: UpstreamExchange, res: ServerResponse, outcome: (outcome: UpstreamOutcome) => void): Promise<number>;
  /** Closes the idle pooled connections (shutdown). */
  close(): void;
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
  return {
    name: options.name,
    send(exchange, res, outcome) {
      return new Promise<number>((resolve, reject) => {
        // With tracing on, the client span, whose traceparent goes upstream (service-kit's http-spans.ts).
        const span = startClientSpan(exchange.method, url, exchange.target, exchange.headers);
        let settled = false;
        /** What becomes of the answer's body: relayed to the client, or drained (the answer was made here, or nobody is listening). */
        let body: 'relay' | 'drain' = 'drain';
        let controller: Dispatcher.DispatchController | undefined;
        // A silence of the upstream, however long the exchange already took, ends in a 504: one timer per
        // exchange, pushed back by every chunk of the answer.
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
          outcome(timedOut ? 'timeout' : 'unreachable');
          reject(timedOut ? new GatewayTimeoutError() : new BadGatewayError(undefined, { cause: err }));
        };
        // A client gone mid-relay frees the upstream socket; one gone before the answer leaves the exchange be.
        const clientGone = (): void => controller?.abort(new Error('the client went away'));
        const resume = (): void => controller?.resume();
        const handler: Dispatcher.DispatchHandler = {
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
            if (res.headersSent || res.destroyed) {
              // Someone answered already (the request deadline) or the client is gone: the answer is drained
              // to free its pooled socket.
            } else if (status >= 400 && !JSON_TYPE.test(headerText(headers['content-type']))) {
              answerForeignError(status, headerText(headers['retry-after']), exchange.path, res, alwaysMessages);
            } else {
              res.writeHead(status, clientResponseHeaders(headers as IncomingHttpHeaders));
              body = 'relay';
              res.once('close', clientGone);
            }
            resolve(status);
          },
          onResponseData(started, chunk) {
            silence.refresh();
            if (body === 'relay' && !res.write(chunk)) {
              started.pause();
              res.once('drain', resume);
            }
          },
          onResponseEnd() {
            clearTimeout(silence);
            if (body !== 'relay') return;
            res.off('close', clientGone);
            res.end();
          },
          onResponseError(_started, err) {
            clearTimeout(silence);
            if (!settled) {
              fail(err);
            } else if (body === 'relay') {
              // An answer that breaks off midway cannot be finished: the client's connection is cut rather
              // than left waiting for the rest.
              res.off('close', clientGone);
              res.destroy();
            }
          },
        };
        pool.dispatch({ method: exchange.method, path: exchange.target, headers: exchange.headers, body: exchange.body.length > 0 ? exchange.body : null }, handler);
      });
    },
    close() {
      void pool.destroy().catch(ignore);
    },
  };
}

function headerText(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(', ') : (value ?? '');
}
