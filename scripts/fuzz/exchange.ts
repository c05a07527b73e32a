// One request of the fuzzer and what came of it: an answer, or no answer at all (the connection failed,
// was cut before the answer ended, or nothing came back in time). A missing answer is a finding like a
// 5xx, so it is returned, never thrown: one request must not end the run and lose what was found.
import { type Agent, request } from 'node:http';

/** An answer read to its end. */
export interface Answer {
  status: number;
  body: Buffer;
  contentType: string | undefined;
}

/** What one request got: an answer, or why there was none. */
export type Exchange = { answer: Answer; failure?: undefined } | { answer?: undefined; failure: string };

export interface ExchangeRequest {
  /** An agent to reuse connections on; a fresh connection (closed after the answer) when omitted. */
  agent?: Agent;
  base: URL;
  method: string;
  /** Path and query, exactly as sent. */
  target: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  /** The whole exchange, from connecting to the answer's last byte, must fit in this. */
  timeoutMs: number;
}

function describeError(err: unknown): string {
  const { code, message } = err as { code?: unknown; message?: unknown };
  return typeof code === 'string' ? `${code}: ${String(message)}` : String(message ?? err);
}

/**
 * Sends one request; resolves with its answer or the reason there was none. It rejects only when the
 * request cannot be written at all (a header or path Node itself refuses): the sender's fault, not the server's.
 */
export function exchange(options: ExchangeRequest): Promise<Exchange> {
  return new Promise((resolve) => {
    const { base, method, target, body, timeoutMs } = options;
    // A body is framed by its length whatever the method: node:http frames a DELETE's (or a GET's) body by
    // nothing, so the server reads it as the start of the next request on the connection, which it then cuts.
    const framed = body === undefined || Object.keys(options.headers).some((name) => ['content-length', 'transfer-encoding'].includes(name.toLowerCase()));
    const headers = framed ? options.headers : { ...options.headers, 'content-length': String(body.length) };
    let settled = false;
    const settle = (result: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const req = request({ agent: options.agent ?? false, hostname: base.hostname, port: base.port, method, path: target, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => settle({ answer: { status: res.statusCode ?? 0, body: Buffer.concat(chunks), contentType: res.headers['content-type'] } }));
      res.on('error', (err) => fail(err));
      // A connection cut after the status line but before the body's end: the answer is not whole.
      res.on('close', () => {
        if (!res.complete) fail(new Error(`the connection closed after status ${res.statusCode ?? '?'}, before the answer ended`));
      });
    });
    // Which connection it was helps to tell a server that cut this request from one that dropped an idle one.
    const fail = (err: unknown) => settle({ failure: `${describeError(err)}${req.reusedSocket ? ' (on a kept-alive connection)' : ''}` });
    // A timer on the whole exchange, not the socket's idle time: a server that trickles a byte now and
    // then stalls the client just the same.
    const timer = setTimeout(() => {
      settle({ failure: `no answer within ${timeoutMs} ms` });
      req.destroy();
    }, timeoutMs);
    req.on('error', fail);
    req.end(body);
  });
}
