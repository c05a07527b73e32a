// One HTTP/1.1 connection's requests, as RFC 9112 section 9.6 orders them: a server that answers with
// `Connection: close` processes no later request of that connection (a client may have pipelined more
// behind it: they must not run unanswered), and an answer never stands in for another request's.
import type { Socket } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { keepHeader } from './answer-head.ts';

const ENDING = Symbol('platform.connectionEnding');
const LAST_ANSWER = Symbol('platform.lastAnswer');
const CLOSING = Symbol('platform.answerClosesConnection');

interface TrackedSocket {
  [ENDING]?: true;
  [LAST_ANSWER]?: ServerResponse;
}

/** An answer after which its connection closes: nothing read after its request runs. */
interface TrackedAnswer {
  [CLOSING]?: true;
}

/**
 * `res` says `Connection: close`, and no later request of its connection runs: what a client sent behind a
 * request answered so (pipelined, or the rest of a body not read) is dropped with the connection.
 */
export function closeAfterAnswer(res: ServerResponse, req: IncomingMessage): void {
  keepHeader(res, 'Connection', 'close');
  (res as ServerResponse & TrackedAnswer)[CLOSING] = true;
  (req.socket as Socket & TrackedSocket)[ENDING] = true;
}

/**
 * The server's request listener for `app`: a request read after an answer that closes its connection
 * (`closeAfterAnswer`) is neither run nor answered (the connection ends after that answer); every other
 * request is remembered as its connection's last, then handed to `app`, at once when it and the request
 * before it are safe, else once that request's answer is sent. (Node's parser itself refuses what follows a
 * request that closes its connection, `Connection: close` or HTTP/1.0: a 400 after its answer.)
 */
export function orderedRequests(
  app: (req: IncomingMessage, res: ServerResponse) => void,
  cutShort: (socket: Duplex) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const socket = req.socket as Socket & TrackedSocket;
    if (socket[ENDING] === true) return;
    // RFC 9112 section 3.2.2: a server MUST accept the absolute-form of a target (`http://host/path?query`);
    // every route, the signature's @path and the forwarding read its origin-form.
    const url = req.url;
    if (url !== undefined && url.charCodeAt(0) !== SLASH) req.url = originForm(url);
    const before = socket[LAST_ANSWER];
    socket[LAST_ANSWER] = res;
    // No process upgrades a protocol, so the request is answered as any (RFC 9110 section 7.8 lets a server
    // ignore Upgrade), but Node's parser reads nothing after it: a request pipelined behind would wait
    // unanswered until the keep-alive timeout. The answer closes the connection instead.
    if (asksUpgrade(req)) {
      lastOnConnection(res, socket);
      // Nor does it find a body cut short by the client's half-close, as it does for any other request.
      if (!req.complete) socket.once('end', () => req.complete || cutShort(socket));
    }
    // Node runs pipelined requests as soon as it reads them; RFC 9112 section 9.3.2 lets a server do so only
    // when they are all safe. A request behind one not yet answered, either of them unsafe, runs once that
    // answer is sent (a GET behind a logout must meet the logout done), and not at all if it never is or if
    // it closes the connection. (A fault found after it, `endAfterAnswers`, waits for its answer.)
    if (before === undefined || before.writableFinished || (SAFE_METHODS.has(before.req.method ?? '') && SAFE_METHODS.has(req.method ?? ''))) {
      app(req, res);
      return;
    }
    const proceed = (): void => {
      before.off('finish', proceed);
      before.off('close', proceed);
      if (before.writableFinished && (before as ServerResponse & TrackedAnswer)[CLOSING] !== true && !socket.destroyed) app(req, res);
    };
    before.once('finish', proceed);
    before.once('close', proceed);
  };
}

const SLASH = 0x2f;
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/** The path and query of an absolute-form target; any other target as it is (`*`, a malformed one). */
function originForm(target: string): string {
  const authority = ABSOLUTE_FORM.exec(target);
  if (authority === null) return target;
  const rest = target.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** RFC 9110 section 9.2.1. */
const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/** As Node's parser (llhttp) tells an upgrade: an Upgrade header, and `upgrade` among the Connection options. */
function asksUpgrade(req: IncomingMessage): boolean {
  const { upgrade, connection } = req.headers;
  return upgrade !== undefined && connection !== undefined && connection.split(',').some((option) => option.trim().toLowerCase() === 'upgrade');
}

/**
 * The process stops serving `socket` (it drains): an answer still to come says `Connection: close`, and no
 * request read after it runs, so a client never sends another on a connection the server is about to close.
 * An idle connection is left as it is: the drain closes it, and a request that comes first is served (the
 * request envelope closes the connection after its answer while the process drains).
 */
export function endKeepAlive(socket: Duplex): void {
  const tracked = socket as Duplex & TrackedSocket;
  const pending = tracked[LAST_ANSWER];
  if (pending !== undefined && !pending.headersSent) lastOnConnection(pending, tracked);
}

/**
 * `res` is the last answer of `socket`, said with Node's own `Connection: close` (a header kept before Express
 * gives `res` its prototype would be lost), and nothing read after its request runs.
 */
function lastOnConnection(res: ServerResponse, socket: Duplex): void {
  res.shouldKeepAlive = false;
  (res as ServerResponse & TrackedAnswer)[CLOSING] = true;
  (socket as Duplex & TrackedSocket)[ENDING] = true;
}

/** The last request read on `socket` (`orderedRequests`), if any. */
export function lastRequestOf(socket: Duplex): IncomingMessage | undefined {
  return (socket as Duplex & TrackedSocket)[LAST_ANSWER]?.req;
}

/**
 * Ends `socket` with `raw`, the answer to a fault Node's parser found (its bytes as they go on the wire), and
 * lets no further request of it run. A fault of the last request read on it (its body malformed, or not
 * received in time) is that request's answer, unless its own has begun (then the connection is cut). A
 * fault after it (the next request's bytes) is answered once every request read before has been, so that it
 * never takes the place of one of their answers: an earlier answer still to come is told to close the
 * connection (unless its head is out), and one that never finishes (its request aborted) takes the
 * connection with it.
 */
export function endAfterAnswers(socket: Duplex, raw: string): void {
  const tracked = socket as Duplex & TrackedSocket;
  tracked[ENDING] = true;
  const pending = tracked[LAST_ANSWER];
  if (pending !== undefined && !pending.req.complete) {
    if (pending.headersSent) socket.destroy();
    else socket.end(raw);
    return;
  }
  if (pending === undefined || pending.writableFinished) {
    socket.end(raw);
    return;
  }
  if (!pending.headersSent) pending.shouldKeepAlive = false;
  // Before Node's own `finish` handler, which would end the connection or hand it to the next answer.
  pending.prependOnceListener('finish', () => socket.end(raw));
  pending.once('close', () => {
    if (!pending.writableFinished) socket.destroy();
  });
}
