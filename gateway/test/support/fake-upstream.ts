import { type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What an upstream received. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type UpstreamHandler = (req: ReceivedRequest, res: ServerResponse) => void;

/** A real HTTP server standing in for a service: it records every request and answers with `handler`. */
export interface FakeUpstream {
  url: string;
  received: ReceivedRequest[];
  close: () => Promise<void>;
}

/** By default: 200 JSON naming the path, plus headers that must not reach the client. */
export const echoHandler: UpstreamHandler = (req, res) => {
  res.writeHead(200, {
    'content-type': 'application/json',
    'x-powered-by': 'Express',
    'set-cookie': 'session=leak',
    'x-internal-trace': 'abc',
    'cache-control': 'no-store',
  });
  res.end(JSON.stringify({ path: req.url, method: req.method }));
};

/** Starts a fake upstream on 127.0.0.1 at a free port. */
export async function startUpstream(handler: UpstreamHandler = echoHandler): Promise<FakeUpstream> {
  const received: ReceivedRequest[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const record = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      received.push(record);
      handler(record, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A URL where nothing listens (a port that was free a moment ago). */
export async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}
