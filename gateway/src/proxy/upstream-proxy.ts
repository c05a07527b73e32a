import { Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { createProxyMiddleware, proxyEventsPlugin } from 'http-proxy-middleware';
import { BadGatewayError, GatewayTimeoutError, SERVICE_UNAVAILABLE_RETRY_AFTER_S, parseUpstreamError } from '@platform/errors';
import { clientResponseHeaders } from './forwarded-headers.ts';

/** How one exchange with an upstream ended: the status it answered, or no answer at all. */
export type UpstreamOutcome = number | 'timeout' | 'unreachable';

/** What the checks decided about a request that goes upstream. */
export interface Forwarding {
  /** The complete header set for the upstream (allow-listed client headers plus the gateway's own). */
  headers: Record<string, string>;
  /** Told once, as soon as the upstream has answered (before the answer is relayed) or failed. */
  ended: (outcome: UpstreamOutcome) => void;
}

/** Sends checked requests to one upstream over a pool of kept-alive connections. */
export interface UpstreamProxy {
  /** The upstream's name, for metrics and logs. */
  name: string;
  /** Proxies `req` (its verified body is `req.body`); a 502 or 504 goes to `next`. */
  forward(req: Request, res: Response, next: NextFunction, forwarding: Forwarding): void;
  /** Closes the idle pooled connections (shutdown). */
  close(): void;
}

export interface UpstreamProxyOptions {
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
/** The W3C trace context headers (CONTRACT.md part 12). */
const TRACE_CONTEXT = new Set(['traceparent', 'tracestate']);

/** One request in flight, kept where Express keeps per-request state: http-proxy's events get only req and res. */
interface Exchange extends Forwarding {
  next: NextFunction;
}

// http-proxy's events are typed with Node's request and response; in this app they are Express's.
function exchangeOf(res: ServerResponse): Exchange | undefined {
  return ((res as Response).locals as { upstream?: Exchange }).upstream;
}

/** Calls `fn` the first time only: an exchange ends once, however many events report it. */
function once<T>(fn: (value: T) => void): (value: T) => void {
  let called = false;
  return (value) => {
    if (called) return;
    called = true;
    fn(value);
  };
}

/**
 * Answers an upstream error that is not JSON (a load balancer's HTML page) in the error shape: every
 * error body a client sees has the contract's shape, even one made by something in between. Its bytes
 * are drained unread: a body that does not say it is JSON gives the shape nothing but its status.
 */
function answerForeignError(proxyRes: IncomingMessage, path: string, res: ServerResponse, alwaysMessages: boolean): void {
  proxyRes.resume();
  const status = proxyRes.statusCode ?? 502;
  const body = parseUpstreamError(status, undefined, path);
  if (alwaysMessages) body.messages ??= [body.message];
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  // Every 503 says when to retry (CONTRACT.md part 13): the upstream's delay in seconds, else the gateway's.
  if (status === 503) headers['retry-after'] = /^\d{1,6}$/.test(String(proxyRes.headers['retry-after'])) ? String(proxyRes.headers['retry-after']) : String(SERVICE_UNAVAILABLE_RETRY_AFTER_S);
  res.writeHead(status, headers).end(JSON.stringify(body));
}

/**
 * An http-proxy-middleware instance for one upstream, used through its documented events: `proxyReq`
 * puts the allow-listed headers on the outgoing request and writes the verified body from `req.body`
 * (as its `fixRequestBody` does for parsed bodies: the stream itself was read for the digest);
 * `proxyRes` trims the upstream's headers to the allow-list and lets http-proxy stream the answer;
 * `error` hands the 502 or 504 to Express.
 */
export function createUpstreamProxy(options: UpstreamProxyOptions): UpstreamProxy {
  const agent = new Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' });
  const alwaysMessages = options.alwaysMessages === true;
  const middleware = createProxyMiddleware({
    target: options.target,
    agent,
    changeOrigin: true,
    // Not the default error-page and logger plugins: their page is plain text, their logger the console.
    ejectPlugins: true,
    plugins: [proxyEventsPlugin],
    on: {
      proxyReq: (proxyReq, req, res) => {
        const exchange = exchangeOf(res);
        if (exchange === undefined) return;
        // http-proxy copied every client header (and set Host to the target's): keep only the allow-list,
        // and the trace context OpenTelemetry's instrumentation injected when the checks left it that
        // job (one that still equals the client's own was not injected: it goes too).
        const injected = !('traceparent' in exchange.headers) && proxyReq.getHeader('traceparent') !== req.headers.traceparent;
        for (const name of proxyReq.getHeaderNames()) {
          if (name !== 'host' && !(name in exchange.headers) && !(injected && TRACE_CONTEXT.has(name))) proxyReq.removeHeader(name);
        }
        for (const [name, value] of Object.entries(exchange.headers)) proxyReq.setHeader(name, value);
        // A silence of the upstream, however long the exchange already took, ends in a 504.
        proxyReq.setTimeout(options.timeoutMs, () => proxyReq.destroy(new GatewayTimeoutError()));
        // Runs when the socket is assigned, before http-proxy ends the (already read) request stream.
        const body: unknown = (req as Request).body;
        if (Buffer.isBuffer(body) && body.length > 0) proxyReq.write(body);
      },
      proxyRes: (proxyRes, req, res) => {
        const exchange = exchangeOf(res);
        if (exchange === undefined) return;
        exchange.ended(proxyRes.statusCode ?? 502);
        // An answer that breaks off midway cannot be finished: cut the client's connection rather
        // than leave it waiting for the rest (unless the client already has a whole answer of ours).
        proxyRes.once('close', () => {
          if (!proxyRes.complete && !res.writableEnded) res.destroy();
        });
        if (res.writableEnded) {
          // The request deadline answered first: http-proxy relays nothing, so drain the late answer
          // to free its pooled socket.
          proxyRes.resume();
          return;
        }
        const status = proxyRes.statusCode ?? 502;
        if (status >= 400 && !JSON_TYPE.test(String(proxyRes.headers['content-type'] ?? ''))) {
          answerForeignError(proxyRes, (req as Request).originalUrl, res, alwaysMessages);
          return;
        }
        proxyRes.headers = clientResponseHeaders(proxyRes.headers) as IncomingMessage['headers'];
      },
      error: (err, _req, res) => {
        // `res` is a socket only for WebSocket upgrades, which the gateway never proxies.
        const exchange = 'headersSent' in res ? exchangeOf(res) : undefined;
        if (exchange === undefined || !('headersSent' in res)) {
          res.destroy();
          return;
        }
        const timedOut = err instanceof GatewayTimeoutError;
        // A no-op when the upstream had answered before it failed.
        exchange.ended(timedOut ? 'timeout' : 'unreachable');
        // The request deadline answered first: the client has its whole answer already.
        if (res.writableEnded) return;
        if (res.headersSent) {
          // The upstream's answer had begun: all that is left is to cut the client's connection.
          res.destroy();
          return;
        }
        exchange.next(timedOut ? err : new BadGatewayError(undefined, { cause: err }));
      },
    },
  });
  return {
    name: options.name,
    forward(req, res, next, forwarding) {
      res.locals.upstream = { headers: forwarding.headers, ended: once(forwarding.ended), next } satisfies Exchange;
      // This server has already answered `Expect: 100-continue`, and the header is hop-by-hop. Left in,
      // http-proxy would send the request without its proxyReq event: without the allow-list and the body.
      delete req.headers.expect;
      void middleware(req, res, next);
    },
    close() {
      agent.destroy();
    },
  };
}
