import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a provider stub received. */
export interface CapturedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** A real HTTP server standing in for the mail or SMS provider: it records every POST. */
export interface CaptureServer {
  url: string;
  received: CapturedRequest[];
  /** The status the next requests get (200 unless changed). */
  answerWith(status: number): void;
  /** How long the next requests wait for their answer (0 unless changed). */
  answerAfter(ms: number): void;
  /** Resolves once `count` requests arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<CapturedRequest[]>;
  close(): Promise<void>;
}

/** Starts a capture server on 127.0.0.1 at a random port. */
export async function startCaptureServer(): Promise<CaptureServer> {
  const received: CapturedRequest[] = [];
  let status = 200;
  let delayMs = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // keep the raw text: a test may assert that it was not JSON
      }
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      const answer = () => {
        if (!res.destroyed) res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
      };
      if (delayMs === 0) answer();
      else setTimeout(answer, delayMs).unref();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/send`,
    received,
    answerWith: (next) => {
      status = next;
    },
    answerAfter: (ms) => {
      delayMs = ms;
    },
    async waitFor(count, timeoutMs = 3000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} provider calls, got ${received.length}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return received.slice(0, count);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
