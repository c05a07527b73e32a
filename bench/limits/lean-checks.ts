// Limit E′: limit E's checks (signature, digest, bearer token, the gateway's whole admission, the vouch) on
// limit C′'s plain node:http server and undici pool: the contract's per-request work with no library
// overhead around it.
// Usage: node bench/limits/lean-checks.ts (the options of checks.ts)
import { createServer } from 'node:http';
import { checksOf } from './checks-of.ts';
import { answeredHealth, bodyOf, checkedUpstreamHeaders, limitOptions, listen, refuse, undiciForwarder } from './common.ts';

const options = limitOptions('lean-checks', ['target', 'redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const check = checksOf(options);
const { forward } = undiciForwarder(options.target);
const server = createServer((req, res) => {
  if (answeredHealth(req, res)) return;
  bodyOf(req)
    .then(async (body) => {
      const passed = await check(req, body);
      if (typeof passed === 'number') return refuse(res, passed);
      forward(req, res, checkedUpstreamHeaders(req, body, passed), body.length === 0 ? null : body);
    })
    .catch(() => refuse(res, 500));
});
listen(server, options.port);
