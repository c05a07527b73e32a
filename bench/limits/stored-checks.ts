// Limit G: limit E′'s checks (signature, digest, bearer token, the gateway's whole admission), then station
// 17130's answer from memory instead of the upstream: what a cached hit of the gateway must do
// (CONTRACT.md part 17: every check first), with nothing around it.
// Usage: node bench/limits/stored-checks.ts (the options of checks.ts but --target)
import { checkedServer, checksOf } from './checks-of.ts';
import { STATION_JSON, limitOptions, listen } from './common.ts';

const options = limitOptions('stored-checks', ['redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const server = checkedServer(checksOf(options), (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': STATION_JSON.length }).end(STATION_JSON);
});
listen(server, options.port);
