// Limit E′: limit E's checks (signature, digest, bearer token, the gateway's whole admission, the vouch) on
// limit C′'s plain node:http server and undici pool: the contract's per-request work with no library
// overhead around it.
// Usage: node bench/limits/lean-checks.ts (the options of checks.ts)
import { checkedServer, checksOf } from './checks-of.ts';
import { checkedUpstreamHeaders, limitOptions, listen, undiciForwarder } from './common.ts';

const options = limitOptions('lean-checks', ['target', 'redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const { forward } = undiciForwarder(options.target);
const server = checkedServer(checksOf(options), (req, res, body, vouch) => {
  forward(req, res, checkedUpstreamHeaders(req, body, vouch), body.length === 0 ? null : body);
});
listen(server, options.port);
