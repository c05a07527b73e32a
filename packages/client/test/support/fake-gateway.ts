import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as the fake gateway received it. */
export interface Recorded {
  method: string;
  /** The raw request target: path and query exactly as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body parsed as JSON (undefined when empty). */
  json: unknown;
}

/** What the fake gateway answers. */
export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** Sent as JSON unless it is a string (sent as is). */
  body?: unknown;
}

export type Handler = (req: Recorded, index: number) => Reply;

/** A real HTTP server standing in for the gateway: records every request, answers with `handler`. */
export interface FakeGateway {
  url: string;
  requests: Recorded[];
  handler: Handler;
  close: () => Promise<void>;
}

/** An error body in SPEC.md's shape. */
export function errorReply(status: number, error: string, message: string, path: string, extra: Record<string, unknown> = {}): Reply {
  return { status, body: { timestamp: new Date().toISOString(), status, error, message, path, ...extra } };
}

/** Tokens as login and refresh answer them; `n` makes each pair distinct. */
export function tokensReply(n: number, username = 'user@example.com'): Reply {
  return { status: 200, body: { username, type: 'Bearer', accessToken: `access-${n}`, refreshToken: `refresh-${n}` } };
}

/** 200 with a plausible body per path: tokens for login/refresh, empty for logout, `{ path }` otherwise. */
export const defaultHandler: Handler = (req, index) => {
  const path = req.url.split('?')[0] ?? '';
  if (path === '/v1/auth/login' || path === '/v1/auth/refresh') return tokensReply(index);
  if (path === '/v1/auth/logout') return { status: 200 };
  if (path === '/v1/weather-stations/get-cities') return { status: 200, body: ['Adana', 'Adıyaman', 'İstanbul'] };
  return { status: 200, body: { path: req.url, method: req.method } };
};

/** Starts a fake gateway on 127.0.0.1 at a free port. */
export async function startFakeGateway(handler: Handler = defaultHandler): Promise<FakeGateway> {
  const fake: FakeGateway = { url: '', requests: [], handler, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const record: Recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, json: body.length > 0 ? JSON.parse(body.toString('utf8')) : undefined };
      fake.requests.push(record);
      const reply = fake.handler(record, fake.requests.length - 1);
      const text = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
      res.writeHead(reply.status, { ...(typeof reply.body === 'string' ? {} : { 'content-type': 'application/json' }), ...reply.headers });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}
