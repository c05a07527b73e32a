// Limit E: limit D whose one Redis round trip is the gateway's own admission (@platform/gateway/engine:
// the rate window, the nonce, the idempotency key, the revocation check and the slot's past), after the
// bearer token verified as the gateway verifies it; with --assertion-key it vouches for the token to the
// service as the gateway does. One flat Express handler, node:http forwarding; no logs, metrics or headers
// of its own. Limit E′ (lean-checks.ts) is the same work on limit C′'s server and pool.
// Usage: node bench/limits/checks.ts --port <port> --target <origin> --redis-url <url> --key-secret <secret>
//   --redis-prefix <prefix> --jwks-url <url> --issuer <origin> [--assertion-key <key>]
import { checksOf } from './checks-of.ts';
import { expressLimit, limitOptions, listen, nodeForwarder, refuse } from './common.ts';

const options = limitOptions('checks', ['target', 'redisUrl', 'keySecret', 'redisPrefix', 'jwksUrl', 'issuer']);
const check = checksOf(options);
const forward = nodeForwarder(options.target);
const server = expressLimit(async (req, res, body) => {
  const passed = await check(req, body);
  if (typeof passed === 'number') return refuse(res, passed);
  forward(req, res, body, passed);
});
listen(server, options.port);
