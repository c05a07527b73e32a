import type { IncomingMessage, ServerResponse } from 'node:http';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '@platform/errors';
import { closeAfterAnswer } from '@platform/service-kit';
import type { Step } from './chain.ts';
import type { GatewayMetrics } from './gateway-metrics.ts';

/** The request announces a body: framed by a length (any, even 0) or sent in chunks (RFC 9112 section 6.3). */
function announcesBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
}

/**
 * A body over the limit is answered at once, without reading the rest (the bytes a client sends after
 * the answer are not waited for): the connection is not kept, since its stream is no longer at a message
 * boundary.
 */
function tooLarge(req: IncomingMessage, res: ServerResponse, limitBytes: number, metrics: GatewayMetrics): PayloadTooLargeError {
  metrics.rejected('body-too-large');
  closeAfterAnswer(res, req);
  lingerOnClose(req);
  return new PayloadTooLargeError(`Request body is larger than ${limitBytes} bytes`);
}

/** How long a connection closed after an early answer still takes (and drops) what its client sends. */
const LINGER_MS = 2000;

/**
 * Closing a socket with unread bytes makes the kernel reset the connection, and a client still writing its
 * body then loses the answer sent just before (it reads the reset first). So the answer is followed by a
 * half-close: the socket ends its side and drops whatever still comes, until the client closes too or
 * LINGER_MS passes (RFC 9112 section 9.6, lingering close).
 */
function lingerOnClose(req: IncomingMessage): void {
  const socket = req.socket as IncomingMessage['socket'] & { destroySoon?: () => void };
  socket.destroySoon = () => {
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', () => socket.destroy());
    socket.end();
    req.resume();
  };
}

/**
 * Step 2: the body, read whole. The digest must be checked against the bytes received, and those bytes are
 * what is forwarded: up to `limitBytes`, else 413, at once when `Content-Length` says so already (the
 * server invites no body over the limit with a 100 Continue: service-kit's `listen`, `maxBodyBytes`) and
 * as soon as the bytes received pass it. A compressed body would be verified and forwarded as something
 * other than what was signed, so it is refused (415). A request that announces no body has none: nothing
 * is read and nothing waited for.
 */
export function readBody(limitBytes: number, metrics: GatewayMetrics): Step {
  return (request) => {
    const { req, res } = request;
    if (!announcesBody(req)) return;
    const encoding = req.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
      throw new UnsupportedMediaTypeError('Unsupported body encoding or charset; send UTF-8 JSON');
    }
    // Node's parser has refused a length that is not a number already (400 before any handler).
    if (Number(req.headers['content-length']) > limitBytes) throw tooLarge(req, res, limitBytes, metrics);
    return new Promise<void>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let received = 0;
      const stop = (): void => {
        req.off('data', onData);
        req.off('end', onEnd);
        req.off('close', onClose);
      };
      const onData = (chunk: Buffer): void => {
        received += chunk.length;
        if (received > limitBytes) {
          stop();
          req.pause();
          reject(tooLarge(req, res, limitBytes, metrics));
          return;
        }
        chunks.push(chunk);
      };
      const onEnd = (): void => {
        stop();
        request.body = Buffer.concat(chunks, received);
        resolve();
      };
      // Closed before its end: the client hung up or broke the framing; nobody may read the answer.
      const onClose = (): void => {
        stop();
        reject(new BadRequestError('Request body was incomplete'));
      };
      req.on('data', onData);
      req.once('end', onEnd);
      req.once('close', onClose);
    });
  };
}
