// Limit B: a bare Express 5 app answering one station's JSON on risk's by/id route: the floor of risk's
// answer on this stack (its router and response helpers, nothing else).
// Usage: node bench/limits/bare-express.ts --port <port>
import { createServer } from 'node:http';
import express from 'express';
import { STATION_JSON, limitOptions, listen } from './common.ts';

const { port } = limitOptions('bare-express', []);
const app = express();
// The same two switches the services' base app turns off, so the limit does no work they skip.
app.disable('x-powered-by');
app.disable('etag');
app.get('/v1/weather-stations/by/id/:stationId', (_req, res) => {
  res.type('application/json').send(STATION_JSON);
});
listen(createServer(app), port);
