import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
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
function answerForeignError(upstream: IncomingMessage, path: string, res: ServerResponse, alwaysMessages: boolean): void {
  upstream.resume();
  upstream.on('error', ignore);
  const status = upstream.statusCode ?? 502;
  const body = parseUpstreamError(status, undefined, path);
  if (alwaysMessages) body.messages ??= [body.message];
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  // Every 503 says when to retry (CONTRACT.md part 13): the upstream's delay in seconds, else the gateway's.
  if (status === 503) headers['retry-after'] = /^\d{1,6}$/.test(String(upstream.headers['retry-after'])) ? String(upstream.headers['retry-after']) : String(SERVICE_UNAVAILABLE_RETRY_AFTER_S);
  res.writeHead(status, headers).end(JSON.stringify(body));
}

const ignore = (): void => undefined;

/**
 * Streams an answer to the client. An answer that breaks off midway cannot be finished: the client's
 * connection is cut rather than left waiting for the rest; a client that is gone frees the upstream
 * socket. (`pipe`, not `stream.pipeline`: the latter makes an AbortController per call and aborts it with
 * a DOMException at the end, ~3% of the gateway's CPU in the issue-27 profile.)
 */
function relay(upstream: IncomingMessage, res: ServerResponse): void {
  upstream.on('error', ignore);
  upstream.once('close', () => {
    if (!upstream.complete && !res.writableEnded) res.destroy();
  });
  res.once('close', () => {
    if (!upstream.complete) upstream.destroy();
  });
  upstream.pipe(res);
}

/**
 * Node's own HTTP client on a keep-alive pool (`node:http` Agent, most recently used socket first). The
 * body was read whole for the digest, so it is sent from that buffer with the headers the checks decided:
 * nothing to undo from a library that copies the client's request (bench/README.md, issue 27: what
 * http-proxy-middleware cost). The answer's status is known before its body is relayed; a relay that
 * breaks off cuts the client's connection; a client that hangs up does not cancel the exchange (its
 * status still decides the idempotency key).
 */
export function createUpstreamClient(options: UpstreamClientOptions): UpstreamClient {
  const agent = new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' });
  const url = new URL(options.target);
  const alwaysMessages = options.alwaysMessages === true;
  return {
    name: options.name,
    send(exchange, res, outcome) {
      return new Promise<number>((resolve, reject) => {
        let settled = false;
        // With tracing on, the client span, whose traceparent goes upstream (service-kit's http-spans.ts).
        const span = startClientSpan(exchange.method, url, exchange.target, exchange.headers);
        const upstreamReq = http.request({ agent, protocol: url.protocol, hostname: url.hostname, port: url.port, method: exchange.method, path: exchange.target, headers: exchange.headers });
        // A silence of the upstream, however long the exchange already took, ends in a 504.
        upstreamReq.setTimeout(options.timeoutMs, () => upstreamReq.destroy(new GatewayTimeoutError()));
        const fail = (err: Error): void => {
          if (settled) return;
          settled = true;
          const timedOut = err instanceof GatewayTimeoutError;
          span?.end(err);
          outcome(timedOut ? 'timeout' : 'unreachable');
          reject(timedOut ? err : new BadGatewayError(undefined, { cause: err }));
        };
        upstreamReq.on('error', fail);
        // An answer that is not HTTP any more (101 Switching Protocols with Upgrade headers; Node hands over
        // the socket only here, else it destroys it and the request would wait for the deadline): a 502 at once.
        upstreamReq.on('upgrade', (_upstream: IncomingMessage, socket: Duplex) => {
          socket.destroy();
          fail(new Error('the upstream switched protocols (101)'));
        });
        // Whatever else ends the exchange without an answer or an error.
        upstreamReq.on('close', () => fail(new Error('the upstream connection closed without an answer')));
        upstreamReq.on('response', (upstream) => {
          const status = upstream.statusCode ?? 502;
          if (status < 200) {
            // A 101 without Upgrade headers: no client asked for another protocol, and no status below 200 is final.
            upstream.on('error', ignore);
            upstream.destroy();
            fail(new Error(`the upstream answered ${status}, not a final status`));
            return;
          }
          settled = true;
          span?.end(status);
          outcome(status);
          if (res.headersSent || res.destroyed) {
            // Someone answered already (the request deadline) or the client is gone: drain the answer to
            // free its pooled socket.
            upstream.on('error', ignore);
            upstream.resume();
          } else if (status >= 400 && !JSON_TYPE.test(String(upstream.headers['content-type'] ?? ''))) {
            answerForeignError(upstream, exchange.path, res, alwaysMessages);
          } else {
            res.writeHead(status, clientResponseHeaders(upstream.headers));
            relay(upstream, res);
          }
          resolve(status);
        });
        upstreamReq.end(exchange.body.length > 0 ? exchange.body : undefined);
      });
    },
    close() {
      agent.destroy();
    },
  };
}
