// Limit C: a bare Express 5 app passing every request to --target with http-proxy-middleware over
// kept-alive connections: what proxying costs with the libraries a gateway on this stack would reach for.
// Usage: node bench/limits/express-proxy.ts --port <port> --target <origin>
import type { Socket } from 'node:net';
import { Agent, type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { answeredHealth, limitOptions, listen, refuse } from './common.ts';

const { port, target } = limitOptions('express-proxy', ['target']);
const app = express();
app.disable('x-powered-by');
app.disable('etag');
// Idle pooled sockets dropped before the upstream's keep-alive timeout (5 s), as the gateway drops its own:
// at a light fixed rate a socket reused as risk closes it is reset. And a failed upstream request answers
// 502 (counted as a failure) instead of throwing: with the plugins ejected, http-proxy throws what it is
// not given a listener for.
const agent = new Agent({ keepAlive: true, timeout: 4000, scheduling: 'lifo' });
const failed = (_err: Error, _req: IncomingMessage, res: ServerResponse | Socket) => {
  if ('headersSent' in res && !res.headersSent) refuse(res, 502);
  else res.destroy();
};
app.get('/health/live', (req, res) => void answeredHealth(req, res));
app.use(createProxyMiddleware({ target, agent, changeOrigin: true, ejectPlugins: true, on: { error: failed } }));
listen(createServer(app), port);
