import { type IncomingMessage, type RequestListener, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { errorBody, reasonPhrase } from '@platform/errors';
import { HeadResponse } from './answer-head.ts';
import { endAfterAnswers, endKeepAlive, lastRequestOf, orderedRequests } from './connection.ts';
import type { Lifecycle } from './health.ts';
import type { Logger } from './logger.ts';
import { SECURITY_HEADERS, refusalOf } from './request-envelope.ts';

/** The security headers every answer carries (request-envelope.ts), as raw header lines. */
const SECURITY_LINES = SECURITY_HEADERS.map(([name, value]) => `${name}: ${value}\r\n`).join('');

/** A listening HTTP server and its address. */
export interface ServerHandle {
  server: Server;
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  url: string;
  /** Stops accepting, waits for in-flight requests up to `drainTimeoutMs`, then cuts what is left. */
  close: (drainTimeoutMs?: number) => Promise<void>;
}

/** How long a client may take to send a request; a slow-loris client is cut when these run out. */
export interface ServerLimits {
  /** Time to receive the complete header section (Node's `headersTimeout`). */
  headersTimeoutMs?: number;
  /** Time to receive the complete request, body included (Node's `requestTimeout`). */
  requestTimeoutMs?: number;
  /**
   * Time a connection may go without a byte read or written while a request is open (Node's `timeout`): a
   * client that stops reading its answers is cut, rather than hold its connection and the answers' memory
   * for good. Above the longest quiet time of a healthy request: the request deadline, the request timeout.
   * Default: the request timeout and 60 s more.
   */
  idleTimeoutMs?: number;
  /**
   * The largest body the app accepts: a request that announces more with `Expect: 100-continue` is not
   * invited to send it (no 100 Continue), so the app's 413 comes before any of its bytes. Unset: every
   * such request is invited, as Node does by default.
   */
  maxBodyBytes?: number;
}

/** Node's default header limit (`--max-http-header-size`), which bounds the request line too. */
const REQUEST_LINE_MAX_BYTES = 16_384;

/**
 * An answer in the error shape for a request Node's parser refused before any middleware ran (header
 * section too large, malformed request line, headers not received in time), so even these carry
 * SPEC.md's body instead of Node's bare status line.
 */
function answerClientError(err: Error & { code?: string; rawPacket?: unknown }, socket: Duplex): void {
  // A reset peer hears nothing.
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status =
    err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT' ? 408 : 400;
  // The request at fault: the last one read on the connection while its body is not all in (the fault is
  // its own), else one not read yet. Its target, when the packet starts with its request line, however long
  // the parser let it be (up to its 16 kB header limit): the body's `path` is the target, never `/` for a
  // long one. A request pipelined behind others has no line of its own known here: `/`.
  const last = lastRequestOf(socket);
  const target =
    last === undefined
      ? /^[A-Z]+ (\S+) HTTP\//.exec(Buffer.isBuffer(err.rawPacket) ? err.rawPacket.toString('latin1', 0, REQUEST_LINE_MAX_BYTES) : '')?.[1]
      : last.complete
        ? undefined
        : last.url;
  const message = status === 431 ? 'Request header fields too large' : status === 408 ? 'Request not received in time' : 'Malformed HTTP request';
  // After the answers of the requests read before it (pipelined), never in place of one (connection.ts).
  endAfterAnswers(socket, rawAnswer(status, message, target ?? '/'));
}

/**
 * A whole answer in the error shape, with the security headers of every answer, as bytes for a socket no
 * ServerResponse serves, closing the connection.
 * `messages` always: these come before any route is known, and station paths require it.
 */
function rawAnswer(status: number, message: string, target: string): string {
  const body = JSON.stringify(errorBody(status, message, target, [message]));
  return (
    `HTTP/1.1 ${status} ${reasonPhrase(status)}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `${SECURITY_LINES}Connection: close\r\n\r\n${body}`
  );
}

/** The 400 of a CONNECT: no process tunnels. */
export const CONNECT_MESSAGE = 'CONNECT is not supported';

/** Starts an HTTP server for `app` on `host:port` (port 0 picks a free one). */
export async function listen(app: RequestListener, port: number, host = '127.0.0.1', limits: ServerLimits = {}): Promise<ServerHandle> {
  const headersTimeout = limits.headersTimeoutMs ?? 10_000;
  const requestTimeout = limits.requestTimeoutMs ?? 30_000;
  const server = createServer(
    {
      headersTimeout,
      // Node never lets requestTimeout be below headersTimeout.
      requestTimeout: Math.max(requestTimeout, headersTimeout),
      // Node checks these limits only this often (30 s by default), which would let a slow client stay far past them.
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 4))),
      // Node answers an HTTP/1.1 request without Host with an empty 400; the request envelope answers it in
      // the error shape, with the security headers and a request id, and logs it (`requestEnvelope`).
      requireHostHeader: false,
      // The headers every answer carries are written with its own in one go (answer-head.ts).
      ServerResponse: HeadResponse,
    },
    // A request behind one answered with `Connection: close` does not run (RFC 9112 section 9.6).
    orderedRequests(app, (socket) => answerClientError(Object.assign(new Error('the request was cut short'), { code: 'HPE_INVALID_EOF_STATE' }), socket)),
  );
  // Past it without a byte moving, the socket is destroyed (nothing listens to its 'timeout'); an idle
  // kept-alive connection is closed sooner, at Node's keep-alive timeout.
  server.timeout = limits.idleTimeoutMs ?? Math.max(requestTimeout, headersTimeout) + 60_000;
  // A client may end its side once it has sent its requests (a half-close): each is still answered, and the
  // connection closes after the last answer. Node's default drops them unanswered; the switch is a property
  // of its HTTP server its type declarations leave out (http-guards.test.ts holds what it does).
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('clientError', answerClientError);
  // Every open connection, so that a drain can tell each one's answers still to come to close it.
  const sockets = new Set<Duplex>();
  server.on('connection', (socket: Duplex) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    // A half-closed client sends nothing more: the answer of its last request, still to come, says so.
    socket.once('end', () => endKeepAlive(socket));
  });
  // Node hands a CONNECT to this event, and without a listener drops the connection unanswered; it is
  // answered in the error shape like any request no process serves (a 400: a 5xx would be the server's failure).
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    // After the answers of the requests pipelined before it, never in place of one (connection.ts).
    endAfterAnswers(socket, rawAnswer(400, CONNECT_MESSAGE, req.url ?? '/'));
  });
  const { maxBodyBytes } = limits;
  // Node's default, but for a body the app would refuse (too large, or a request the envelope refuses before
  // reading it: `refusalOf`): its answer is then the final one (RFC 9110 section 10.1.1).
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const tooLarge = maxBodyBytes !== undefined && Number(req.headers['content-length']) > maxBodyBytes;
    if (!tooLarge && refusalOf(req) === undefined) res.writeContinue();
    server.emit('request', req, res);
  });
  // An expectation other than 100-continue: Node would answer a bare 417 before the Host is looked at; the
  // request envelope answers it (`unmetExpectation`) in the error shape, after the Host's 400.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port: bound } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    url: `http://${shownHost}:${bound}`,
    close: (drainTimeoutMs = 10_000) => drain(server, sockets, drainTimeoutMs),
  };
}

function drain(server: Server, sockets: ReadonlySet<Duplex>, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    // An answer under way says `Connection: close`: its client would otherwise send its next request on a
    // connection the sweep below closes the moment that answer is out.
    for (const socket of sockets) endKeepAlive(socket);
    const cut = setTimeout(() => server.closeAllConnections(), timeoutMs);
    // close() stops accepting and closes the sockets idle right now; a busy keep-alive socket becomes
    // idle only after its answer, so keep sweeping until the last one is gone.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearTimeout(cut);
      clearInterval(sweep);
      resolve();
    });
    server.closeIdleConnections();
  });
}

export interface ShutdownOptions {
  logger: Logger;
  lifecycle: Lifecycle;
  servers: readonly ServerHandle[];
  drainTimeoutMs: number;
  /** Run in order after the servers have drained: close pools, Redis, workers. */
  closers: ReadonlyArray<{ name: string; close: () => Promise<void> }>;
  /** Called with the exit code; `process.exit` outside tests. */
  exit?: (code: number) => void;
}

/**
 * Graceful shutdown on SIGTERM and SIGINT: mark not ready, stop accepting, drain in-flight requests
 * (cut after `drainTimeoutMs`), then close each resource, then exit 0. A second signal exits 1 at once.
 * Returns the shutdown function, so a composition root can also call it on a fatal start-up error.
 */
export function stopOnSignals(options: ShutdownOptions): (reason: string) => Promise<void> {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let stopping = false;
  const shutdown = async (reason: string): Promise<void> => {
    if (stopping) {
      options.logger.warn({ reason }, 'second stop request: exiting now');
      exit(1);
      return;
    }
    stopping = true;
    options.lifecycle.draining = true;
    options.logger.info({ reason, drainTimeoutMs: options.drainTimeoutMs }, 'draining');
    await Promise.all(options.servers.map((s) => s.close(options.drainTimeoutMs)));
    let exitCode = 0;
    for (const { name, close } of options.closers) {
      try {
        await close();
      } catch (err) {
        exitCode = 1;
        options.logger.error({ err, resource: name }, 'failed to close');
      }
    }
    options.logger.info({ exitCode }, 'stopped');
    exit(exitCode);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return shutdown;
}
