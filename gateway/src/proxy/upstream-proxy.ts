import { Agent, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { createProxyMiddleware, debugProxyErrorsPlugin, proxyEventsPlugin } from 'http-proxy-middleware';
import { BadGatewayError, GatewayTimeoutError, parseUpstreamError } from '@platform/errors';
import { clientResponseHeaders } from './forwarded-headers.ts';

/** One request on its way upstream: the verified body bytes and what to do when the upstream fails. */
export interface ProxyJob {
  body: Buffer;
  /** The complete header set for the upstream (allow-listed client headers plus the gateway's own). */
  headers: Record<string, string>;
  /** Frees the idempotency key; called before a 5xx (upstream's, 502 or 504) is answered. */
  release: () => Promise<void>;
  /** Told when the exchange ends: the upstream status, `timeout` or `unreachable`. */
  done: (outcome: string) => void;
}

/** Sends checked requests to one upstream over a pool of kept-alive connections. */
export interface UpstreamProxy {
  /** The upstream's name, for metrics and logs. */
  name: string;
  forward(req: Request, res: Response, next: NextFunction, job: ProxyJob): void;
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
/** An error answer that is not JSON (a load balancer's HTML page) is read this far, then re-shaped. */
const MAX_FOREIGN_ERROR_BYTES = 16_384;

interface InFlight extends ProxyJob {
  next: NextFunction;
  /** The request URI as received, the `path` of an error body. */
  path: string;
  timedOut: boolean;
  /** The upstream's response has arrived: from then on only a broken stream can go wrong. */
  answered: boolean;
}

function readBounded(stream: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      if (size < limit) chunks.push(chunk);
      size += chunk.length;
    });
    stream.on('end', () => resolve(Buffer.concat(chunks).subarray(0, limit)));
    stream.on('error', () => resolve(Buffer.concat(chunks)));
  });
}

/** Relays the upstream's answer: allow-listed headers, the body streamed; 5xx first releases the key. */
async function relay(proxyRes: IncomingMessage, res: ServerResponse, job: InFlight, alwaysMessages: boolean): Promise<void> {
  const status = proxyRes.statusCode ?? 502;
  job.answered = true;
  job.done(String(status));
  if (res.headersSent) {
    // The request deadline answered first: drain the late answer so its pooled socket is freed.
    proxyRes.resume();
    return;
  }
  if (status >= 500) await job.release();
  const contentType = String(proxyRes.headers['content-type'] ?? '');
  if (status >= 400 && !/^application\/(.+\+)?json\b/i.test(contentType)) {
    // Every error body a client sees has the contract's shape, even one made by something in between.
    const body = parseUpstreamError(status, await readBounded(proxyRes, MAX_FOREIGN_ERROR_BYTES), job.path);
    if (alwaysMessages) body.messages ??= [body.message];
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(body));
    return;
  }
  res.writeHead(status, clientResponseHeaders(proxyRes.headers));
  proxyRes.pipe(res);
}

/**
 * An http-proxy-middleware instance for one upstream. The gateway has already buffered and verified
 * the body, so it is written from that buffer (the same bytes the digest covered) rather than piped
 * from the spent request stream; the headers are replaced by the allow-listed set before proxying.
 */
export function createUpstreamProxy(options: UpstreamProxyOptions): UpstreamProxy {
  const agent = new Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' });
  const jobs = new WeakMap<IncomingMessage, InFlight>();
  const middleware = createProxyMiddleware({
    target: options.target,
    agent,
    changeOrigin: true,
    selfHandleResponse: true,
    proxyTimeout: options.timeoutMs,
    // Not the default error-page and logger plugins: their page is plain text, their logger the console.
    ejectPlugins: true,
    plugins: [debugProxyErrorsPlugin, proxyEventsPlugin],
    on: {
      proxyReq: (proxyReq, req) => {
        const job = jobs.get(req);
        if (job === undefined) return;
        proxyReq.on('timeout', () => {
          job.timedOut = true;
        });
        // Runs when the socket is assigned, before http-proxy ends the (already consumed) request stream.
        if (job.body.length > 0) proxyReq.write(job.body);
      },
      proxyRes: (proxyRes, req, res) => {
        const job = jobs.get(req);
        if (job === undefined) return;
        relay(proxyRes, res, job, options.alwaysMessages === true).catch((err: unknown) => job.next(err));
      },
      error: (err, req, res) => {
        const job = jobs.get(req);
        if (job === undefined) return;
        const response = res as ServerResponse | Socket;
        if (job.answered || !('headersSent' in response) || response.headersSent) {
          // The upstream's answer has begun; when it breaks, all that is left is to cut the client's
          // (an error page being re-shaped is finished by relay with what was read).
          if (!('headersSent' in response) || response.headersSent) response.destroy();
          return;
        }
        job.done(job.timedOut ? 'timeout' : 'unreachable');
        const failure = job.timedOut ? new GatewayTimeoutError(undefined, { cause: err }) : new BadGatewayError(undefined, { cause: err });
        job.release().then(
          () => job.next(failure),
          () => job.next(failure),
        );
      },
    },
  });
  return {
    name: options.name,
    forward(req, res, next, job) {
      jobs.set(req, { ...job, next, path: req.originalUrl, timedOut: false, answered: false });
      // http-proxy copies req.headers to the upstream request: replace them by the allow-listed set
      // (this also drops Expect and Connection, which would otherwise change how it sends the body).
      req.headers = job.headers;
      void middleware(req, res, next);
    },
    close() {
      agent.destroy();
    },
  };
}
