// One HTTP/1.1 connection's requests, as RFC 9112 section 9.6 orders them: a server that answers with
// `Connection: close` processes no later request of that connection (a client may have pipelined more
// behind it: they must not run unanswered), and an answer never stands in for another request's.
import type { Socket } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { keepHeader } from './answer-head.ts';

const ENDING = Symbol('platform.connectionEnding');
const LAST_ANSWER = Symbol('platform.lastAnswer');

interface TrackedSocket {
  [ENDING]?: true;
  [LAST_ANSWER]?: ServerResponse;
}

/**
 * `res` says `Connection: close`, and no later request of its connection runs: what a client sent behind a
 * request answered so (pipelined, or the rest of a body not read) is dropped with the connection.
 */
export function closeAfterAnswer(res: ServerResponse, req: IncomingMessage): void {
  keepHeader(res, 'Connection', 'close');
  (req.socket as Socket & TrackedSocket)[ENDING] = true;
}

/**
 * The server's request listener for `app`: a request read after an answer that closes its connection
 * (`closeAfterAnswer`) is neither run nor answered (the connection ends after that answer); every other
 * request is remembered as its connection's last, then handed to `app`. (Node's parser itself refuses what
 * follows a request that closes its connection, `Connection: close` or HTTP/1.0: a 400 after its answer.)
 */
export function orderedRequests(app: (req: IncomingMessage, res: ServerResponse) => void): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const socket = req.socket as Socket & TrackedSocket;
    if (socket[ENDING] === true) return;
    socket[LAST_ANSWER] = res;
    // No process upgrades a protocol, so the request is answered as any (RFC 9110 section 7.8 lets a server
    // ignore Upgrade), but Node's parser reads nothing after it: a request pipelined behind would wait
    // unanswered until the keep-alive timeout. The answer closes the connection instead (Node's own
    // `Connection: close`: a header kept here would be lost when Express gives `res` its prototype).
    if (asksUpgrade(req)) {
      res.shouldKeepAlive = false;
      socket[ENDING] = true;
    }
    app(req, res);
  };
}

/** As Node's parser (llhttp) tells an upgrade: an Upgrade header, and `upgrade` among the Connection options. */
function asksUpgrade(req: IncomingMessage): boolean {
  const { upgrade, connection } = req.headers;
  return upgrade !== undefined && connection !== undefined && connection.split(',').some((option) => option.trim().toLowerCase() === 'upgrade');
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
