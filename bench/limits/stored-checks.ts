// Limit G: limit E′'s checks (signature, digest, bearer token, the gateway's whole admission), then station
// 17130's answer from memory instead of the upstream, with what the gateway writes for every request
// (envelope-of.ts: the request envelope with its line and metrics, the quota headers): what a cached hit of
// the gateway must do (CONTRACT.md part 17: every check first), with nothing around it.
// Usage: node bench/limits/stored-checks.ts (the options of checks.ts but --target)
import { checkedHandler, checksOf } from './checks-of.ts';
import { STATION_JSON, limitOptions, listen } from './common.ts';
import { envelopedServer, withQuota } from './envelope-of.ts';

const options = limitOptions('stored-checks', ['redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const answer = withQuota((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': STATION_JSON.length, 'x-cache': 'HIT', age: '0' }).end(STATION_JSON);
});
listen(envelopedServer('limit-g', checkedHandler(checksOf(options), answer)), options.port);
