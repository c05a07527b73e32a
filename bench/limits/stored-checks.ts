// Limit G: limit E′'s checks (signature, digest, bearer token, the gateway's whole admission), then station
// 17130's answer from memory instead of the upstream: what a cached hit of the gateway must do
// (CONTRACT.md part 17: every check first), with nothing around it.
// Usage: node bench/limits/stored-checks.ts (the options of checks.ts)
import { createServer } from 'node:http';
import { checksOf } from './checks-of.ts';
import { STATION_JSON, answeredHealth, bodyOf, limitOptions, listen, refuse } from './common.ts';

const options = limitOptions('stored-checks', ['redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const check = checksOf(options);
const server = createServer((req, res) => {
  if (answeredHealth(req, res)) return;
  bodyOf(req)
    .then(async (body) => {
      const passed = await check(req, body);
      if (typeof passed === 'number') return refuse(res, passed);
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': STATION_JSON.length }).end(STATION_JSON);
    })
    .catch(() => refuse(res, 500));
});
listen(server, options.port);
