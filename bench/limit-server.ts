// The limits the services are measured against, each in its own process so it never shares an event
// loop with the load generator: `node` (limit A, bare node:http) or `express` (limit B, a bare Express 5
// app), both answering one station's JSON serialised once at start, as the risk index does; `proxy`
// (limit C, a bare Express 5 app passing every request to <target> with http-proxy-middleware over
// kept-alive connections: what proxying alone costs on this stack, the gateway's floor).
// Usage: node bench/limit-server.ts node|express <port>, node bench/limit-server.ts proxy <port> <target>
import { Agent, createServer } from 'node:http';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';

/** Station 17130 as the risk service answers it (services/risk/data/stations.csv). */
export const STATION_JSON = Buffer.from(
  JSON.stringify({ stationId: 17130, stationName: 'Keçiören', latitude: 39.9727, longitude: 32.8637, city: 'Ankara', district: 'Keçiören' }),
);

const [mode, portText, target] = process.argv.slice(2);
const port = Number(portText);
if (!(mode === 'node' || mode === 'express' || (mode === 'proxy' && target !== undefined)) || !Number.isInteger(port)) {
  process.stderr.write('usage: node bench/limit-server.ts node|express <port>, or proxy <port> <target>\n');
  process.exit(2);
}

function bareNode() {
  return createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': STATION_JSON.length });
    res.end(STATION_JSON);
  });
}

function bareExpress() {
  const app = express();
  // The same two switches the services' base app turns off, so the limit does no work they skip.
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/v1/weather-stations/by/id/:stationId', (_req, res) => {
    res.type('application/json').send(STATION_JSON);
  });
  return createServer(app);
}

function bareProxy(upstream: string) {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(createProxyMiddleware({ target: upstream, agent: new Agent({ keepAlive: true }), changeOrigin: true, ejectPlugins: true }));
  return createServer(app);
}

const server = mode === 'node' ? bareNode() : mode === 'express' ? bareExpress() : bareProxy(String(target));
server.listen(port, '127.0.0.1', () => process.stdout.write(`listening ${port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
