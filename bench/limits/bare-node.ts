// Limit A: bare node:http answering one station's JSON, serialised once at start as the risk index does.
// Usage: node bench/limits/bare-node.ts --port <port>
import { createServer } from 'node:http';
import { STATION_JSON, limitOptions, listen } from './common.ts';

const { port } = limitOptions('bare-node', []);
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': STATION_JSON.length });
  res.end(STATION_JSON);
});
listen(server, port);
